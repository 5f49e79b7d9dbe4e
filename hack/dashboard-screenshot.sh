#!/usr/bin/env bash
# Draws the Grafana dashboard's panels from a real run into a PNG (default docs/dashboard.png): the e2e test
# test/e2e/test_observability.py runs two operator replicas, a real Prometheus scraping them and a workload
# (jobs that succeed, fail, wait and are refused; the leader killed and the standby taking over), and with
# MPIOPERATOR_DASHBOARD_PNG set queries every panel's expressions over the run and draws them (matplotlib).
# Usage: hack/dashboard-screenshot.sh [out.png]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
component=dashboard-screenshot
# shellcheck source=lib.sh
source "$root/hack/lib.sh"
cd "$root"
out=$(realpath -m "${1:-docs/dashboard.png}")

bash hack/setup.sh --no-control-plane
if ! .venv/bin/python -c 'import matplotlib' 2>/dev/null; then
  .venv/bin/python -m pip install -q -e '.[bench]'
fi
KUBEBUILDER_ASSETS=$(bash hack/build-control-plane.sh)
PROMETHEUS_BIN=${PROMETHEUS_BIN:-$(bash hack/build-prometheus.sh)}
export KUBEBUILDER_ASSETS PROMETHEUS_BIN
MPIOPERATOR_DASHBOARD_PNG="$out" .venv/bin/pytest test/e2e/test_observability.py -q -p no:cacheprovider
echo "dashboard drawn into $out"
