#!/usr/bin/env bash
# Builds (or finds) Helm, which the chart's tests (charts/mpi-operator) drive.
# Usage: hack/build-helm.sh   -> prints the helm binary path on stdout, progress on stderr
# The output dir is keyed by Helm version and Go version, so a cache hit skips the build entirely.
set -euo pipefail
component=helm
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=lib.sh
source "$here/lib.sh"
module=helm.sh/helm/v4

require_go
out="$cache_root/bin/helm-${HELM_VERSION}_go${go_ver}"
bin="$out/helm"
reuse_or_lock helm "$bin" "$bin"

# The module has no replace directives, so `go install module/cmd@version` builds it as released; the
# version stamp is what Helm's Makefile sets (`helm version` and chart `kubeVersion` checks read it).
ldflags="-s -w -X $module/internal/version.version=$HELM_VERSION -X $module/internal/version.gitTreeState=clean"

log "cold build of $module $HELM_VERSION (go$go_ver) into $out; a few minutes on 2 cores"
run_step helm "$out" go_install "$ldflags" "$module/cmd/helm@$HELM_VERSION"
"$bin" version >&2
build_done "$bin"
