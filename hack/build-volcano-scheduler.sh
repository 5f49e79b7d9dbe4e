#!/usr/bin/env bash
# Builds (or finds) Volcano's scheduler (vc-scheduler), for gang-scheduling e2e tests with Volcano.
# Usage: hack/build-volcano-scheduler.sh   -> prints the binary path on stdout, progress on stderr
# The output dir is keyed by the Volcano version and the Go version, so a cache hit skips the build.
set -euo pipefail
component=volcano-scheduler
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=lib.sh
source "$here/lib.sh"
module=volcano.sh/volcano

require_go
out="$cache_root/bin/volcano-scheduler-${VOLCANO_SCHEDULER_VERSION}_go${go_ver}"
bin="$out/vc-scheduler"
reuse_or_lock volcano-scheduler "$bin" "$bin"

# Volcano's go.mod requires volcano.sh/apis and the k8s staging modules at v0.0.0 and resolves them with
# replace directives: versioned ones for k8s (carried over, mapped to served patch releases), and a local
# ./staging copy for volcano.sh/apis, which becomes the published release of the same line.
build_scheduler() {
  wrapper_module "$cache_root/wrappers/volcano-scheduler-$VOLCANO_SCHEDULER_VERSION" example.local/volcanoscheduler
  local gomod
  gomod=$(go mod download -json "$module@$VOLCANO_SCHEDULER_VERSION" \
    | python3 -c 'import json,sys; print(json.load(sys.stdin)["GoMod"])')
  local replaces
  replaces=$(go mod edit -json "$gomod" | python3 -c '
import json, sys
mod = json.load(sys.stdin)
mod["Replace"] = [r for r in mod.get("Replace") or [] if r["New"].get("Version")]
print(json.dumps(mod))' | python3 "$here/scheduler_plugins_replaces.py")
  [ -n "$replaces" ] || die "no replace directives found in $gomod"
  # shellcheck disable=SC2086  # one -replace=old=new@v word per line, no spaces inside
  go mod edit $replaces -replace="volcano.sh/apis=volcano.sh/apis@$VOLCANO_APIS_VERSION"
  go mod edit -require="$module@$VOLCANO_SCHEDULER_VERSION" -tool="$module/cmd/scheduler"
  go mod tidy
  go build -trimpath -ldflags="-s -w" -o "$bin" "$module/cmd/scheduler"
}

log "cold build of $module $VOLCANO_SCHEDULER_VERSION (go$go_ver) into $out; a few minutes on 2 cores"
run_step volcano-scheduler "$out" build_scheduler
build_done "$bin"
