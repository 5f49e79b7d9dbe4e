#!/usr/bin/env bash
# Builds (or finds) the scheduler-plugins scheduler (kube-scheduler + Coscheduling and friends).
# Usage: hack/build-scheduler-plugins.sh        -> prints the scheduler binary path on stdout, progress on stderr
#        hack/build-scheduler-plugins.sh crd    -> prints the path of the PodGroup CRD inside the Go module cache
# The output dir is keyed by scheduler-plugins version and Go version, so a cache hit skips the build entirely.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=versions.env
source "$here/versions.env"
# Newer minors are not on the module proxy; v0.34 pairs with Kubernetes 1.34 client libraries.
SCHEDULER_PLUGINS_VERSION=${SCHEDULER_PLUGINS_VERSION:-v0.34.7}
module=sigs.k8s.io/scheduler-plugins

log() { printf '[scheduler-plugins %4ss] %s\n' "$SECONDS" "$*" >&2; }
die() { printf 'error: %s\n' "$*" >&2; exit 1; }

command -v go >/dev/null 2>&1 || die "Go ${GO_MIN_VERSION}+ is required to build scheduler-plugins: install it from https://go.dev/dl."
go_ver=$(go env GOVERSION | sed 's/^go//')
export GOTOOLCHAIN=local CGO_ENABLED=0 GOFLAGS=-mod=mod

# Downloads the module if needed (a no-op on a warm module cache) and prints one field of its metadata.
module_field() {
  go mod download -json "$module@$SCHEDULER_PLUGINS_VERSION" \
    | python3 -c 'import json,sys; print(json.load(sys.stdin)[sys.argv[1]])' "$1"
}

if [ "${1:-}" = crd ]; then
  crd="$(module_field Dir)/config/crd/bases/scheduling.x-k8s.io_podgroups.yaml"
  [ -f "$crd" ] || die "PodGroup CRD not found at $crd"
  echo "$crd"
  exit 0
fi

cache_root=${MPIOPERATOR_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/mpioperator}
out="$cache_root/bin/scheduler-plugins-${SCHEDULER_PLUGINS_VERSION}_go${go_ver}"
bin="$out/scheduler-plugins-scheduler"
stamp="$out/.complete"
if [ -f "$stamp" ] && [ -x "$bin" ]; then
  echo "$bin"
  exit 0
fi
mkdir -p "$out" "$cache_root/wrappers"

progress() { while sleep 60; do log "still building $1 ..."; done; }

# The module's go.mod pins k8s.io staging modules with replace directives, which `go install mod@v`
# refuses; a throw-away main module carries the same replaces and builds cmd/scheduler from there.
build_scheduler() {
  local wrap="$cache_root/wrappers/scheduler-plugins-$SCHEDULER_PLUGINS_VERSION"
  rm -rf "$wrap"; mkdir -p "$wrap"; cd "$wrap"
  go mod init example.local/schedulerplugins
  go mod edit -go=1.26.0
  local gomod; gomod=$(module_field GoMod)
  local r
  for r in $(go mod edit -json "$gomod" | python3 -c '
import json, sys
for r in json.load(sys.stdin).get("Replace") or []:
    new = r["New"]
    if new.get("Version"):
        print(f"{r[\"Old\"][\"Path\"]}={new[\"Path\"]}@{new[\"Version\"]}")
    else:
        sys.exit(f"unexpected local replace {r}")'); do
    go mod edit -replace="$r"
  done
  go mod edit -require="$module@$SCHEDULER_PLUGINS_VERSION"
  go mod edit -tool="$module/cmd/scheduler"
  go mod tidy
  # Upstream's Makefile stamps the same field, so `--version` reports the plugins release.
  go build -trimpath -ldflags="-s -w -X k8s.io/component-base/version.gitVersion=$SCHEDULER_PLUGINS_VERSION" \
    -o "$bin" "$module/cmd/scheduler"
}

log "cold build of $module $SCHEDULER_PLUGINS_VERSION (go$go_ver) into $out; several minutes on 2 cores"
progress scheduler & ticker=$!
if ! (build_scheduler) >"$out/build.log" 2>&1; then
  kill "$ticker" 2>/dev/null || true
  tail -30 "$out/build.log" >&2
  die "building scheduler-plugins failed (full log: $out/build.log)"
fi
kill "$ticker" 2>/dev/null || true
"$bin" --version >&2 || true
touch "$stamp"
log "done"
echo "$bin"
