#!/usr/bin/env bash
# Builds (or finds) Prometheus and promtool, which prove the dashboard and alert rules (docs/observe.md).
# Usage: hack/build-prometheus.sh        -> prints the prometheus binary path on stdout (promtool is next to it)
#        hack/build-prometheus.sh crds   -> prints the directory of the Prometheus Operator's CRDs (ServiceMonitor,
#                                           PodMonitor, PrometheusRule) inside the Go module cache
# The output dir is keyed by Prometheus version and Go version, so a cache hit skips the build entirely.
set -euo pipefail
component=prometheus
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=lib.sh
source "$here/lib.sh"
module=github.com/prometheus/prometheus
# Prometheus 3.Y.Z is published on the module proxy as v0.3YY.Z (the Go module never took a /v3 path).
release=${PROMETHEUS_VERSION#v}
IFS=. read -r major minor patch <<<"$release"
module_version=$(printf 'v0.%d%02d.%d' "$major" "$minor" "$patch")

require_go
if [ "${1:-}" = crds ]; then
  dir=$(go mod download -json "github.com/prometheus-operator/prometheus-operator@$PROMETHEUS_OPERATOR_VERSION" \
    | python3 -c 'import json,sys; print(json.load(sys.stdin)["Dir"])')/example/prometheus-operator-crd
  [ -f "$dir/monitoring.coreos.com_servicemonitors.yaml" ] || die "Prometheus Operator CRDs not found in $dir"
  echo "$dir"
  exit 0
fi
out="$cache_root/bin/prometheus-${PROMETHEUS_VERSION}_go${go_ver}"
reuse_or_lock prometheus "$out/prometheus" "$out/prometheus" "$out/promtool"

# remove_all_sd drops the cloud service discoveries (AWS, Azure, GCE, ...) the tests never use: static
# targets only, and a much smaller build. Without builtinassets the web UI is not embedded (it would need
# the npm build of the React app); the HTTP API, which the tests query, is unaffected.
ldflags="-s -w -X github.com/prometheus/common/version.Version=$release"
ldflags+=" -X github.com/prometheus/common/version.Branch=release"

log "cold build of $module $module_version (Prometheus $PROMETHEUS_VERSION, go$go_ver) into $out; several minutes on 2 cores"
run_step prometheus "$out" go_install "$ldflags" -tags=remove_all_sd \
  "$module/cmd/prometheus@$module_version" "$module/cmd/promtool@$module_version"
first_line "$out/prometheus" --version
build_done "$out/prometheus"
