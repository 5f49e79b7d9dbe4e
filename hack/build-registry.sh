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
done_already() { [ -f "$out/.complete" ] && [ -x "$bin" ]; }
if done_already; then echo "$bin"; exit 0; fi
build_lock registry
if done_already; then echo "$bin"; exit 0; fi
mkdir -p "$out"

# The module has no replace directives, so `go install module/cmd@version` builds it as released.
build_registry() {
  GOBIN="$out" go install -trimpath -ldflags="-s -w" "$module/cmd/registry@$REGISTRY_VERSION"
}

log "cold build of $module $REGISTRY_VERSION (go$go_ver) into $out; about a minute on 2 cores"
run_step registry "$out" build_registry
[ -x "$bin" ] || die "go install finished but $bin is missing (log: $out/build-registry.log)"
"$bin" --version >&2 || true
touch "$out/.complete"
log "done"
echo "$bin"
