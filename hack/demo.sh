#!/usr/bin/env bash
# The demo: sets everything up on a fresh machine, starts a real local cluster (kube-apiserver,
# controller-manager, scheduler, kwok fake nodes), installs the operator from the manifests, runs two
# leader-elected operator replicas, submits the pi example and follows it until it Succeeds.
# On a terminal everything stays up until Ctrl+C; otherwise (or with DEMO_EXIT=1) it tears down at the end.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"

bash hack/setup.sh
KUBEBUILDER_ASSETS=$(bash hack/build-control-plane.sh)
export KUBEBUILDER_ASSETS

stay=()
if [ -t 0 ] && [ -z "${DEMO_EXIT:-}" ]; then stay=(--stay); fi
exec .venv/bin/python -m mpioperator.testing.demo "${stay[@]}" "$@"
