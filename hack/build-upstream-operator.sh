#!/usr/bin/env bash
# Builds (or finds) upstream's Go MPI Operator, the baseline of the side-by-side benchmarks (issue 8).
# Usage: hack/build-upstream-operator.sh   -> prints the binary path on stdout, progress on stderr
# The output dir is keyed by the upstream version and the Go version, so a cache hit skips the build.
set -euo pipefail
component=upstream-operator
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=lib.sh
source "$here/lib.sh"
module=github.com/kubeflow/mpi-operator

require_go
out="$cache_root/bin/upstream-mpi-operator-${UPSTREAM_OPERATOR_VERSION}_go${go_ver}"
bin="$out/mpi-operator"
reuse_or_lock upstream-operator "$bin" "$bin"

# `go install module/cmd@version` first reads the module's version list for deprecation notices, which
# some module proxies refuse (403); a throw-away main module requiring the exact version never asks.
build_operator() {
  wrapper_module "$cache_root/wrappers/upstream-mpi-operator-$UPSTREAM_OPERATOR_VERSION" example.local/upstreamoperator
  go mod edit -require="$module@$UPSTREAM_OPERATOR_VERSION" -tool="$module/cmd/mpi-operator"
  go mod tidy
  go build -trimpath -ldflags="-s -w" -o "$bin" "$module/cmd/mpi-operator"
}

log "cold build of $module $UPSTREAM_OPERATOR_VERSION (go$go_ver) into $out; a few minutes on 2 cores"
run_step upstream-operator "$out" build_operator
build_done "$bin"
