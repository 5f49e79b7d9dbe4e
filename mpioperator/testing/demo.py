"""The README demo: a local cluster, the manifests, two operator replicas, the pi example to Succeeded."""

from __future__ import annotations

import argparse
import os
import signal
import sys
import time
from pathlib import Path
from typing import Any

import yaml

from mpioperator.testing.cluster import LocalCluster, wait_crd_established
from mpioperator.testing.operator import OperatorProcess
from mpioperator.testing.rest import RestError
from mpioperator.testing.wait import wait_for

REPO = Path(__file__).resolve().parents[2]
OPERATOR_NAMESPACE = "mpi-operator"


def say(message: str) -> None:
    print(f"== {message}", flush=True)


def leader(cluster: LocalCluster) -> str:
    try:
        lease = cluster.rest.get(
            f"/apis/coordination.k8s.io/v1/namespaces/{OPERATOR_NAMESPACE}/leases/mpi-operator"
        )
    except RestError:
        return "(none yet)"
    return str(lease.get("spec", {}).get("holderIdentity", "(none)"))


def describe(job: dict[str, Any], pods: list[dict[str, Any]]) -> str:
    conditions = [
        c["type"] for c in (job.get("status") or {}).get("conditions") or () if c["status"] == "True"
    ]
    phases = ", ".join(f"{p['metadata']['name']}={p['status'].get('phase', '?')}" for p in pods) or "no pods"
    return f"conditions={conditions or '[]'} pods: {phases}"


def follow(cluster: LocalCluster, namespace: str, name: str, timeout: float) -> dict[str, Any]:
    path = f"/apis/kubeflow.org/v2beta1/namespaces/{namespace}/mpijobs/{name}"
    selector = f"training.kubeflow.org/job-name={name}"
    deadline = time.monotonic() + timeout
    last = ""
    while time.monotonic() < deadline:
        job = cluster.rest.get(path)
        pods = cluster.rest.get(f"/api/v1/namespaces/{namespace}/pods?labelSelector={selector}")["items"]
        line = describe(job, pods)
        if line != last:
            print(f"   {time.strftime('%H:%M:%S')} {line}", flush=True)
            last = line
        done = {c["type"] for c in (job.get("status") or {}).get("conditions") or () if c["status"] == "True"}
        if done & {"Succeeded", "Failed"}:
            return dict(job)
        time.sleep(0.5)
    raise TimeoutError(f"{name} did not finish within {timeout:.0f}s")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--stay", action="store_true", help="keep everything running until Ctrl+C")
    parser.add_argument("--workdir", type=Path, default=REPO / ".cache" / "demo")
    parser.add_argument("--example", type=Path, default=REPO / "examples" / "v2beta1" / "pi" / "pi.yaml")
    args = parser.parse_args(argv)
    args.workdir.mkdir(parents=True, exist_ok=True)
    started = time.monotonic()

    say("starting the local cluster: etcd, kube-apiserver, controller-manager, scheduler, kwok with 4 nodes")
    with LocalCluster(tier="full", nodes=4) as cluster:
        say(f"cluster up in {time.monotonic() - started:.1f}s; kubectl get nodes")
        print(cluster.kubectl("get", "nodes").stdout, flush=True)

        say("kubectl apply --server-side -k manifests/overlays/standalone")
        print(
            cluster.kubectl(
                "apply", "--server-side", "-k", str(REPO / "manifests/overlays/standalone")
            ).stdout
        )
        wait_crd_established(cluster, "mpijobs.kubeflow.org")
        # kwok fakes pods without running them, so the Deployment's replicas would only pretend to run;
        # the same command runs here as two local processes with the Deployment's ServiceAccount token.
        cluster.kubectl("-n", OPERATOR_NAMESPACE, "scale", "deployment/mpi-operator", "--replicas=0")

        say("starting two operator replicas (leader election on the Lease mpi-operator/mpi-operator)")
        replicas = [
            OperatorProcess(
                cluster,
                name=f"mpi-operator-{i}",
                args=(f"--lock-namespace={OPERATOR_NAMESPACE}", "--log-format=console"),
                workdir=args.workdir / f"replica-{i}",
            ).start()
            for i in range(2)
        ]
        wait_for(lambda: any(r.leading() for r in replicas), timeout=60, what="a leading replica")
        say(f"leader: {leader(cluster)}")

        example = yaml.safe_load(args.example.read_text())
        name = example["metadata"]["name"]
        say(f"kubectl apply -f {args.example.relative_to(REPO)}   (MPIJob {name})")
        print(cluster.kubectl("apply", "-f", str(args.example)).stdout, flush=True)
        job = follow(cluster, "default", name, timeout=180)
        print(cluster.kubectl("get", "mpijobs,jobs,pods,services,configmaps,secrets", "-n", "default").stdout)
        state = [c["type"] for c in job["status"]["conditions"] if c["status"] == "True"][-1]
        say(f"MPIJob {name}: {state} after {time.monotonic() - started:.1f}s in total")

        env_line = f"export KUBECONFIG={cluster.kubeconfig} PATH={cluster.binaries.directory}:$PATH"
        print(
            "\nWhat to try next (in another shell):\n"
            f"  {env_line}\n"
            f"  {'kubectl get mpijobs -A':<44}# the state column comes from the conditions\n"
            f"  {'kubectl apply -R -f examples/v2beta1/':<44}# more examples (kwok simulates their pods)\n"
            f"  {f'kill {replicas[0].pid}':<44}# stop a replica; the other takes the lease at once\n"
            f"  curl -s localhost:{replicas[0].metrics_port}/metrics | grep mpi_operator\n"
            f"  operator logs: {args.workdir}/replica-*/\n",
            flush=True,
        )
        if args.stay:
            print("Everything stays up. Press Ctrl+C to stop.", flush=True)
            signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))  # unwinds through the teardown below
            try:
                while True:
                    time.sleep(3600)
            except KeyboardInterrupt:
                pass
        for replica in replicas:
            replica.terminate()
        return 0 if state == "Succeeded" else 1


if __name__ == "__main__":
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    sys.exit(main())
