#!/usr/bin/env bash
# The demo: sets everything up on a fresh machine, starts a real local cluster (kube-apiserver,
# controller-manager, scheduler, and a real node where the machine allows, else kwok fake nodes), installs
# the operator from the manifests, runs two leader-elected replicas, submits the pi example and follows it
# until it Succeeds. `hack/demo.sh --kwok` uses kwok nodes even where a real node could run.
# On a terminal everything stays up until Ctrl+C; otherwise (or with DEMO_EXIT=1) it tears down at the end.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
component=demo
# shellcheck source=lib.sh
source "$root/hack/lib.sh"
cd "$root"

bash hack/setup.sh
KUBEBUILDER_ASSETS=$(bash hack/build-control-plane.sh)
export KUBEBUILDER_ASSETS
# A real node where the machine can run one (root on Linux) and kwok was not asked for.
if [ "$(id -u)" = 0 ] && [[ " $* " != *" --kwok "* ]]; then
  MPIOPERATOR_NODE_BIN=$(bash hack/setup-node.sh)
  export MPIOPERATOR_NODE_BIN
  REGISTRY_BIN=$(bash hack/build-registry.sh)
  export REGISTRY_BIN
  bash hack/build-images.sh --demo >/dev/null  # only what the demo runs: no training images
fi

stay=()
if [ -t 0 ] && [ -z "${DEMO_EXIT:-}" ]; then stay=(--stay); fi
exec .venv/bin/python -m mpioperator.testing.demo "${stay[@]}" "$@"
