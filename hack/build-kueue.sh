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
done_already() { [ -f "$out/.complete" ] && [ -x "$bin" ]; }
if done_already; then echo "$bin"; exit 0; fi
build_lock kueue
if done_already; then echo "$bin"; exit 0; fi
mkdir -p "$out"

# No replace directives in Kueue's go.mod, so `go install module/cmd@version` builds it as released. Without
# the version stamp Kueue reports itself as v0.0.0-main.
install_kueue() {
  GOBIN="$out" go install -trimpath \
    -ldflags="-s -w -X $module/pkg/version.GitVersion=$KUEUE_VERSION" \
    "$module/cmd/kueue@$KUEUE_VERSION"
}

log "cold build of $module $KUEUE_VERSION (go$go_ver) into $out; a few minutes on 2 cores"
run_step kueue "$out" install_kueue
[ -x "$bin" ] || die "go install finished but $bin is missing (log: $out/build-kueue.log)"
touch "$out/.complete"
log "done"
echo "$bin"
