#!/usr/bin/env bash
# Builds (or finds) CNCF distribution's registry, the local image registry of the real-node tier.
# Usage: hack/build-registry.sh   -> prints the registry binary path on stdout, progress on stderr
# The output dir is keyed by registry version and Go version, so a cache hit skips the build entirely.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=versions.env
source "$here/versions.env"
module=github.com/distribution/distribution/v3

log() { printf '[registry %4ss] %s\n' "$SECONDS" "$*" >&2; }
die() { printf 'error: %s\n' "$*" >&2; exit 1; }

command -v go >/dev/null 2>&1 || die "Go ${GO_MIN_VERSION}+ is required to build the registry: install it from https://go.dev/dl."
go_ver=$(go env GOVERSION | sed 's/^go//')
export GOTOOLCHAIN=local CGO_ENABLED=0

cache_root=${MPIOPERATOR_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/mpioperator}
out="$cache_root/bin/registry-${REGISTRY_VERSION}_go${go_ver}"
bin="$out/registry"
stamp="$out/.complete"
if [ -f "$stamp" ] && [ -x "$bin" ]; then
  echo "$bin"
  exit 0
fi
mkdir -p "$out"

progress() { while sleep 60; do log "still building $1 ..."; done; }

log "cold build of $module $REGISTRY_VERSION (go$go_ver) into $out; about a minute on 2 cores"
progress registry >/dev/null & ticker=$!  # off stdout: $(...) callers would wait for its sleep
# The module has no replace directives, so `go install module/cmd@version` builds it as released.
(GOBIN="$out" go install -trimpath -ldflags="-s -w" "$module/cmd/registry@$REGISTRY_VERSION") >"$out/build.log" 2>&1 & builder=$!
if ! wait "$builder"; then
  kill "$ticker" 2>/dev/null || true
  tail -30 "$out/build.log" >&2
  die "building the registry failed (full log: $out/build.log)"
fi
kill "$ticker" 2>/dev/null || true
[ -x "$bin" ] || die "go install finished but $bin is missing (log: $out/build.log)"
"$bin" --version >&2 || true
touch "$stamp"
log "done"
echo "$bin"
