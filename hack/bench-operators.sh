#!/usr/bin/env bash
# Sets everything up and runs the side-by-side benchmark against upstream's Go operator (issue 8):
# the venv with the chart's dependency, the control plane, upstream's operator built from its Go module.
# Usage: hack/bench-operators.sh [bench_operators flags, e.g. --rounds 3 --out bench-results]
# Ours runs from .venv-runtime, a venv with only the runtime dependencies, as in the image.
# Prints the tables at the end; bench-results/ gets summary.txt, results.json and the charts
# (bench-operators-raised.png, bench-operators-default.png, bench-scale.png).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
component=bench-operators
# shellcheck source=lib.sh
source "$root/hack/lib.sh"
cd "$root"

bash hack/setup.sh --no-control-plane
if ! .venv/bin/python -c 'import matplotlib' 2>/dev/null; then
  echo "[bench] installing the chart's dependency (the bench extra)" >&2
  .venv/bin/python -m pip install -q -e '.[bench]'
fi
# Ours runs as the image runs it: from a venv holding the package and only its runtime dependencies
# (`pip install .`, as the Dockerfile does). The dev venv's test and lint tools would add to its start-up:
# structlog imports `rich` when it is there, and an editable install puts a finder before every import.
if [ ! -x .venv-runtime/bin/python ]; then
  .venv/bin/python -m venv .venv-runtime
fi
echo "[bench] installing this tree into .venv-runtime (runtime dependencies only)" >&2
.venv-runtime/bin/python -m pip install -q --no-cache-dir .
KUBEBUILDER_ASSETS=$(bash hack/build-control-plane.sh)
export KUBEBUILDER_ASSETS
bash hack/build-upstream-operator.sh >/dev/null
exec .venv/bin/python -m test.benchmarks.bench_operators --operator-command "$root/.venv-runtime/bin/mpi-operator" "$@"
