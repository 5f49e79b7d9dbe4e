#!/usr/bin/env bash
# Builds (or finds) upstream's Go MPI Operator, the baseline of the side-by-side benchmarks (issue 8).
# Usage: hack/build-upstream-operator.sh   -> prints the binary path on stdout, progress on stderr
# The output dir is keyed by the upstream version and the Go version, so a cache hit skips the build.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=versions.env
source "$here/versions.env"
UPSTREAM_OPERATOR_VERSION=${UPSTREAM_OPERATOR_VERSION:-v0.8.2}
module=github.com/kubeflow/mpi-operator

log() { printf '[upstream-operator %4ss] %s\n' "$SECONDS" "$*" >&2; }
die() { printf 'error: %s\n' "$*" >&2; exit 1; }

command -v go >/dev/null 2>&1 || die "Go ${GO_MIN_VERSION}+ is required to build upstream's operator: install it from https://go.dev/dl."
go_ver=$(go env GOVERSION | sed 's/^go//')
export GOTOOLCHAIN=local CGO_ENABLED=0 GOFLAGS=-mod=mod

cache_root=${MPIOPERATOR_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/mpioperator}
out="$cache_root/bin/upstream-mpi-operator-${UPSTREAM_OPERATOR_VERSION}_go${go_ver}"
bin="$out/mpi-operator"
if [ -f "$out/.complete" ] && [ -x "$bin" ]; then
  echo "$bin"
  exit 0
fi
mkdir -p "$out" "$cache_root/wrappers"

# `go install module/cmd@version` first reads the module's version list for deprecation notices, which
# some module proxies refuse (403); a throw-away main module requiring the exact version never asks.
build() {
  local wrap="$cache_root/wrappers/upstream-mpi-operator-$UPSTREAM_OPERATOR_VERSION"
  rm -rf "$wrap"; mkdir -p "$wrap"; cd "$wrap"
  go mod init example.local/upstreamoperator
  go mod edit -go=1.26.0 -require="$module@$UPSTREAM_OPERATOR_VERSION" -tool="$module/cmd/mpi-operator"
  go mod tidy
  go build -trimpath -ldflags="-s -w" -o "$bin" "$module/cmd/mpi-operator"
}

log "cold build of $module $UPSTREAM_OPERATOR_VERSION (go$go_ver) into $out; a few minutes on 2 cores"
progress() { while sleep 60; do log "still building ..."; done; }
progress >/dev/null & ticker=$!  # off stdout: $(...) callers would wait for its sleep
# Backgrounded and waited for, so `set -e` holds inside build (it would not inside `if ! (...)`).
(build) >"$out/build.log" 2>&1 & builder=$!
if ! wait "$builder"; then
  kill "$ticker" 2>/dev/null || true
  tail -30 "$out/build.log" >&2
  die "building upstream's operator failed (full log: $out/build.log)"
fi
kill "$ticker" 2>/dev/null || true
touch "$out/.complete"
log "done"
echo "$bin"
