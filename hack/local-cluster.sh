#!/usr/bin/env bash
# A local cluster for development: prints the KUBECONFIG and PATH to export in another shell, then runs
# until Ctrl+C. The harness (mpioperator.testing) lives in the source tree only, not in the wheel users
# install, so it runs from this checkout's venv, which hack/setup.sh makes or refreshes first.
# Usage: hack/local-cluster.sh [--tier full|apiserver|real] [--nodes N] [--node-gpus N] ...   (--help)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
component=local-cluster
# shellcheck source=lib.sh
source "$root/hack/lib.sh"
bash "$root/hack/setup.sh" >&2
exec "$root/.venv/bin/python" -m mpioperator.testing.cli "$@"
