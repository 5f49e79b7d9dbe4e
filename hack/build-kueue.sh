#!/usr/bin/env bash
# Builds (or finds) Kueue's manager, which runs beside the operator in the Kueue e2e tests.
# Usage: hack/build-kueue.sh   -> prints the kueue binary path on stdout, progress on stderr
# The output dir is keyed by Kueue version and Go version, so a cache hit skips the build entirely.
set -euo pipefail
component=kueue
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=lib.sh
source "$here/lib.sh"
module=sigs.k8s.io/kueue

require_go
out="$cache_root/bin/kueue-${KUEUE_VERSION}_go${go_ver}"
bin="$out/kueue"
reuse_or_lock kueue "$bin" "$bin"

# No replace directives in Kueue's go.mod, so `go install module/cmd@version` builds it as released. Without
# the version stamp Kueue reports itself as v0.0.0-main.

log "cold build of $module $KUEUE_VERSION (go$go_ver) into $out; a few minutes on 2 cores"
run_step kueue "$out" go_install "-s -w -X $module/pkg/version.GitVersion=$KUEUE_VERSION" "$module/cmd/kueue@$KUEUE_VERSION"
build_done "$bin"
