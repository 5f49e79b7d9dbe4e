#!/usr/bin/env bash
# Builds (or finds) Volcano's scheduler (vc-scheduler), for gang-scheduling e2e tests with Volcano.
# Usage: hack/build-volcano-scheduler.sh   -> prints the binary path on stdout, progress on stderr
# The output dir is keyed by the Volcano version and the Go version, so a cache hit skips the build.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=versions.env
source "$here/versions.env"
# The newest release whose module, and a volcano.sh/apis release to stand in for its in-tree copy, the
# module proxy here serves (v1.14.0, v1.14.2 and v1.15.x of the scheduler, apis v1.14.1+ are refused).
VOLCANO_SCHEDULER_VERSION=${VOLCANO_SCHEDULER_VERSION:-v1.14.1}
VOLCANO_APIS_VERSION=${VOLCANO_APIS_VERSION:-v1.14.0}
module=volcano.sh/volcano

log() { printf '[volcano-scheduler %4ss] %s\n' "$SECONDS" "$*" >&2; }
die() { printf 'error: %s\n' "$*" >&2; exit 1; }

command -v go >/dev/null 2>&1 || die "Go ${GO_MIN_VERSION}+ is required to build Volcano's scheduler: install it from https://go.dev/dl."
go_ver=$(go env GOVERSION | sed 's/^go//')
export GOTOOLCHAIN=local CGO_ENABLED=0 GOFLAGS=-mod=mod

cache_root=${MPIOPERATOR_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/mpioperator}
out="$cache_root/bin/volcano-scheduler-${VOLCANO_SCHEDULER_VERSION}_go${go_ver}"
bin="$out/vc-scheduler"
if [ -f "$out/.complete" ] && [ -x "$bin" ]; then
  echo "$bin"
  exit 0
fi
mkdir -p "$out" "$cache_root/wrappers"

# Volcano's go.mod requires volcano.sh/apis and the k8s staging modules at v0.0.0 and resolves them with
# replace directives: versioned ones for k8s (carried over, mapped to served patch releases), and a local
# ./staging copy for volcano.sh/apis, which becomes the published release of the same line.
build() {
  local wrap="$cache_root/wrappers/volcano-scheduler-$VOLCANO_SCHEDULER_VERSION"
  rm -rf "$wrap"; mkdir -p "$wrap"; cd "$wrap"
  go mod init example.local/volcanoscheduler
  go mod edit -go=1.26.0
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
progress() { while sleep 60; do log "still building ..."; done; }
progress >/dev/null & ticker=$!  # off stdout: $(...) callers would wait for its sleep
# Backgrounded and waited for, so `set -e` holds inside build (it would not inside `if ! (...)`).
(build) >"$out/build.log" 2>&1 & builder=$!
if ! wait "$builder"; then
  kill "$ticker" 2>/dev/null || true
  tail -30 "$out/build.log" >&2
  die "building Volcano's scheduler failed (full log: $out/build.log)"
fi
kill "$ticker" 2>/dev/null || true
touch "$out/.complete"
log "done"
echo "$bin"
