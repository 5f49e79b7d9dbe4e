#!/usr/bin/env bash
# Builds (or finds) CNCF distribution's registry, the local image registry of the real-node tier.
# Usage: hack/build-registry.sh   -> prints the registry binary path on stdout, progress on stderr
# The output dir is keyed by registry version and Go version, so a cache hit skips the build entirely.
set -euo pipefail
component=registry
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=lib.sh
source "$here/lib.sh"
module=github.com/distribution/distribution/v3

require_go
out="$cache_root/bin/registry-${REGISTRY_VERSION}_go${go_ver}"
bin="$out/registry"
reuse_or_lock registry "$bin" "$bin"

# The module has no replace directives, so `go install module/cmd@version` builds it as released.
log "cold build of $module $REGISTRY_VERSION (go$go_ver) into $out; about a minute on 2 cores"
run_step registry "$out" go_install "-s -w" "$module/cmd/registry@$REGISTRY_VERSION"
"$bin" --version >&2 || true
build_done "$bin"
