#!/usr/bin/env bash
# The demo: sets everything up on a fresh machine, starts a real local cluster (kube-apiserver,
# controller-manager, scheduler, kwok fake nodes), shows it working, and keeps it up until Ctrl+C.
# Non-interactive runs (no terminal, or DEMO_EXIT=1) tear down after showing.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"

bash hack/setup.sh
demo_dir="$root/.cache/demo"
mkdir -p "$demo_dir"
rm -f "$demo_dir/kubeconfig" "$demo_dir/cluster.out"

echo "== starting the local cluster (full tier, 4 kwok nodes)"
.venv/bin/mpioperator-local-cluster --nodes 4 --write-kubeconfig "$demo_dir/kubeconfig" >"$demo_dir/cluster.out" 2>&1 &
cluster_pid=$!
cleanup() { kill -TERM "$cluster_pid" 2>/dev/null && wait "$cluster_pid" 2>/dev/null; true; }
trap cleanup EXIT INT TERM

until grep -q "Press Ctrl+C" "$demo_dir/cluster.out" 2>/dev/null; do
  if ! kill -0 "$cluster_pid" 2>/dev/null; then cat "$demo_dir/cluster.out" >&2; exit 1; fi
  sleep 0.5
done
cat "$demo_dir/cluster.out"
bin_dir=$(bash hack/build-control-plane.sh)
export KUBECONFIG="$demo_dir/kubeconfig" PATH="$bin_dir:$PATH"

echo "== kubectl version"
kubectl version
echo "== kubectl get nodes"
kubectl get nodes -o wide

echo "== a batch Job runs on a kwok node (kwok simulates the kubelet; the pod 'runs' for 2s)"
kubectl apply -f - <<'YAML'
apiVersion: batch/v1
kind: Job
metadata:
  name: hello
spec:
  template:
    metadata:
      annotations:
        sim.mpioperator.io/run-for: 2s
    spec:
      restartPolicy: Never
      containers:
      - name: hello
        image: busybox
        command: ["true"]
YAML
kubectl wait --for=condition=Complete job/hello --timeout=90s
kubectl get job,pods -o wide

if [ -t 0 ] && [ -z "${DEMO_EXIT:-}" ]; then
  echo
  echo "The cluster stays up. In another shell:"
  echo "  export KUBECONFIG=$KUBECONFIG PATH=$bin_dir:\$PATH"
  echo "Press Ctrl+C to stop."
  wait "$cluster_pid"
fi
