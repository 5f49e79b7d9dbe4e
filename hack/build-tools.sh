#!/usr/bin/env bash
# Builds (or finds) the tools the integration, e2e and multi-node tests drive beside the control plane:
# Helm, Prometheus, the scheduler-plugins scheduler, Volcano's scheduler and Kueue, one after another.
# Usage: hack/build-tools.sh DIR
#   Writes DIR/env, one `NAME=path` line as each tool is ready (in that order: the chart and alert-rule
#   tests of the integration tier need the first two), DIR/log (the builds' progress) and DIR/status (the
#   exit code) at the end. hack/test.sh runs it in the background so that the first tiers run while a cold
#   machine compiles; the tests that need a tool wait for DIR/status (mpioperator/testing/background.py).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
dir=${1:?usage: hack/build-tools.sh DIR}
mkdir -p "$dir"
: >"$dir/env"

tools=(
  HELM_BIN:build-helm.sh
  PROMETHEUS_BIN:build-prometheus.sh
  SCHEDULER_PLUGINS_BIN:build-scheduler-plugins.sh
  VOLCANO_SCHEDULER_BIN:build-volcano-scheduler.sh
  KUEUE_BIN:build-kueue.sh
)
status=0
for tool in "${tools[@]}"; do
  name=${tool%%:*}
  script=${tool#*:}
  if path=$(bash "$here/$script" 2>>"$dir/log"); then
    # Written whole in one append, so a reader never sees half a line.
    printf '%s=%s\n' "$name" "$path" >>"$dir/env"
  else
    status=$?
    echo "hack/$script failed with exit $status" >>"$dir/log"
    break
  fi
done
echo "$status" >"$dir/status"
exit "$status"
