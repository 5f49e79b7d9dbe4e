"""The README demo: a local cluster, the manifests, two operator replicas, the pi example to Succeeded.

Where the machine can run a real node (root on Linux) the operator runs as the manifests' Deployment and
pi is really computed; elsewhere kwok nodes simulate the pods and the operator runs as two processes."""

from __future__ import annotations

import argparse
import os
import signal
import sys
import time
from pathlib import Path
from typing import Any

import yaml

from mpioperator.testing.cluster import LocalCluster
from mpioperator.testing.images.catalog import DEMO_IMAGES
from mpioperator.testing.install import (
    OPERATOR_NAMESPACE,
    install_deployment,
    install_manifests,
    lease_holder,
)
from mpioperator.testing.node.realnode import host_problem
from mpioperator.testing.operator import OperatorProcess
from mpioperator.testing.wait import wait_for

REPO = Path(__file__).resolve().parents[2]


def say(message: str) -> None:
    print(f"== {message}", flush=True)


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
    parser.add_argument("--kwok", action="store_true", help="use kwok nodes even where a real node could run")
    args = parser.parse_args(argv)
    args.workdir.mkdir(parents=True, exist_ok=True)
    problem = "asked for with --kwok" if args.kwok else host_problem()
    if problem is None:
        return _demo_real(args)
    say(f"no real node ({problem}): falling back to kwok nodes, which simulate pods without running them")
    return _demo_kwok(args)


def _demo_real(args: argparse.Namespace) -> int:
    started = time.monotonic()
    say("starting the local cluster: etcd, kube-apiserver, controller-manager, scheduler, and a real node")
    say("(containerd, CNI bridge, CoreDNS, kubelet; images from a local registry standing in for docker.io)")
    with LocalCluster(tier="real", nodes=0, node_images=DEMO_IMAGES) as cluster:
        say(f"cluster up in {time.monotonic() - started:.1f}s; kubectl get nodes -o wide")
        print(cluster.kubectl("get", "nodes", "-o", "wide").stdout, flush=True)

        say("kubectl apply --server-side -k manifests/overlays/standalone   (its Deployment: 2 replicas)")
        install_deployment(cluster)
        print(cluster.kubectl("-n", OPERATOR_NAMESPACE, "get", "pods", "-o", "wide").stdout, flush=True)
        say(f"leader: {lease_holder(cluster, OPERATOR_NAMESPACE)}")

        name = _submit(cluster, args.example)
        job = follow(cluster, "default", name, timeout=300)
        state = _final_state(job)
        say(f"kubectl logs job/{name}-launcher")
        print(cluster.kubectl("logs", f"job/{name}-launcher", check=False).stdout, flush=True)
        print(cluster.kubectl("get", "mpijobs,jobs,pods,services,configmaps,secrets", "-n", "default").stdout)
        say(f"MPIJob {name}: {state} after {time.monotonic() - started:.1f}s in total")
        _hints(
            cluster,
            [
                ("kubectl get mpijobs -A", "the state column comes from the conditions"),
                ("kubectl apply -f examples/v2beta1/pi/pi-mpich.yaml", "MPICH (pi-intel.yaml: Intel MPI)"),
                (f"kubectl -n {OPERATOR_NAMESPACE} delete pod <leader>", "the standby takes the Lease"),
                (f"kubectl -n {OPERATOR_NAMESPACE} logs deploy/mpi-operator", "the operator's log"),
            ],
        )
        _stay(args.stay)
        return 0 if state == "Succeeded" else 1


def _demo_kwok(args: argparse.Namespace) -> int:
    started = time.monotonic()
    say("starting the local cluster: etcd, kube-apiserver, controller-manager, scheduler, kwok with 4 nodes")
    with LocalCluster(tier="full", nodes=4) as cluster:
        say(f"cluster up in {time.monotonic() - started:.1f}s; kubectl get nodes")
        print(cluster.kubectl("get", "nodes").stdout, flush=True)

        say("kubectl apply --server-side -k manifests/overlays/standalone   (Deployment kept at 0 replicas)")
        # kwok fakes pods without running them, so the Deployment's replicas would only pretend to run;
        # the same command runs here as two local processes with the Deployment's ServiceAccount token.
        install_manifests(cluster)

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
        say(f"leader: {lease_holder(cluster, OPERATOR_NAMESPACE)}")

        name = _submit(cluster, args.example)
        job = follow(cluster, "default", name, timeout=180)
        print(cluster.kubectl("get", "mpijobs,jobs,pods,services,configmaps,secrets", "-n", "default").stdout)
        state = _final_state(job)
        say(f"MPIJob {name}: {state} after {time.monotonic() - started:.1f}s in total")
        _hints(
            cluster,
            [
                ("kubectl get mpijobs -A", "the state column comes from the conditions"),
                ("kubectl apply -R -f examples/v2beta1/", "more examples (kwok simulates their pods)"),
                (f"kill {replicas[0].pid}", "stop a replica; the other takes the lease at once"),
                (f"curl -s localhost:{replicas[0].metrics_port}/metrics | grep mpi_operator", ""),
                (f"ls {args.workdir}/replica-*/", "the operators' logs"),
            ],
        )
        _stay(args.stay)
        for replica in replicas:
            replica.terminate()
        return 0 if state == "Succeeded" else 1


def _submit(cluster: LocalCluster, example: Path) -> str:
    name = str(yaml.safe_load(example.read_text())["metadata"]["name"])
    shown = example.relative_to(REPO) if example.is_relative_to(REPO) else example
    say(f"kubectl apply -f {shown}   (MPIJob {name})")
    print(cluster.kubectl("apply", "-f", str(example)).stdout, flush=True)
    return name


def _final_state(job: dict[str, Any]) -> str:
    return str([c["type"] for c in job["status"]["conditions"] if c["status"] == "True"][-1])


def _hints(cluster: LocalCluster, lines: list[tuple[str, str]]) -> None:
    env_line = f"export KUBECONFIG={cluster.kubeconfig} PATH={cluster.binaries.directory}:$PATH"
    print(f"\nWhat to try next (in another shell):\n  {env_line}", flush=True)
    for command, why in lines:
        print(f"  {command:<52}{'# ' + why if why else ''}", flush=True)
    print(flush=True)


def _stay(stay: bool) -> None:
    if not stay:
        return
    print("Everything stays up. Press Ctrl+C to stop.", flush=True)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))  # unwinds through the teardown
    try:
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    sys.exit(main())
