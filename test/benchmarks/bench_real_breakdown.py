"""Where the time goes on the real node, from `kubectl apply` of an MPIJob to its first rank's first line.

One real node (containerd, CoreDNS, a kubelet) and our operator (with --exec-agent, which serves ssh jobs
as before). Each job is the mpi4py check (images/mpi4py/allreduce.py, Open MPI 4) as the real tier runs it:
`launcherCreationPolicy: WaitForWorkersReady`, a readiness probe on sshd's port for ssh workers, tiny
requests so that 16 workers fit the node. The time is split into three shares that add up to the total:

- the operator's: the create call until every worker, the Service, ConfigMap and Secret exist, plus the last
  worker Ready until the launcher Job exists (its reaction to WaitForWorkersReady);
- the kubelet's: the children made until every worker is Ready (sandbox, image, container start, readiness
  probe), plus the launcher Job made until its pod is Running (the Job controller, sandbox, start);
- MPI's: the launcher's pod Running until the first `rank R of N` line (mpirun, the ssh or exec fan-out to
  the workers, Python and MPI_Init).

Children come from watch streams (Timeline), pods' readiness and phase from a list every 0.1 s, the first
rank's line from the container runtime's own timestamp (`kubectl logs --timestamps`). A warm-up job per
agent first, so no row pays for an image pull.

    sudo bash -c 'source hack/lib.sh; ...'   # as root, with the real node's binaries, as the real tier:
    KUBEBUILDER_ASSETS=... MPIOPERATOR_NODE_BIN=... REGISTRY_BIN=... \\
        .venv/bin/python -m test.benchmarks.bench_real_breakdown --sizes 2,16 --rounds 3
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import shlex
import statistics
import tempfile
import threading
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import yaml

from mpioperator.testing.cluster import LocalCluster
from mpioperator.testing.install import OPERATOR_NAMESPACE, install_manifests
from mpioperator.testing.jobs import Job
from mpioperator.testing.mpi4py_check import IMAGES
from mpioperator.testing.node import slot
from mpioperator.testing.node.settings import NodeNetwork
from mpioperator.testing.operator import OperatorProcess
from mpioperator.testing.wait import wait_for
from test.benchmarks.timeline import Timeline
from test.real.test_real_exec_agent import exec_rbac_documents
from test.real.test_real_mpi4py import check_job

# The Service, the ConfigMap and the SSH Secret, beside the workers.
SHARED_CHILDREN = 3
POLL_S = 0.1
RUN_TIMEOUT = 600.0
JOB_LABEL = "training.kubeflow.org/job-name"
ROLE_LABEL = "training.kubeflow.org/job-role"


@dataclass(frozen=True)
class Breakdown:
    workers: int
    agent: str
    total_s: float
    operator_s: float
    kubelet_s: float
    mpi_s: float
    # The operator's share in its two parts: the create call until the children exist, and the last worker
    # Ready until the launcher Job exists.
    children_s: float
    launcher_after_ready_s: float

    @property
    def operator_share(self) -> float:
        return self.operator_s / self.total_s


class PodWatch:
    """When the job's workers were last all Ready, and when its launcher pod was first Running (monotonic)."""

    def __init__(self, cluster: LocalCluster, namespace: str, name: str, workers: int) -> None:
        self._cluster, self._path = (
            cluster,
            f"/api/v1/namespaces/{namespace}/pods?labelSelector={JOB_LABEL}={name}",
        )
        self._workers = workers
        self.workers_ready_at: float | None = None
        self.launcher_running_at: float | None = None
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True, name=f"pods of {name}")

    def start(self) -> PodWatch:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()

    def _run(self) -> None:
        while not self._stop.is_set() and self.launcher_running_at is None:
            pods = self._cluster.rest.get(self._path)["items"]
            now = time.monotonic()
            workers = [p for p in pods if p["metadata"]["labels"].get(ROLE_LABEL) == "worker"]
            ready = [p for p in workers if _condition(p, "Ready")]
            if self.workers_ready_at is None and len(ready) >= self._workers:
                self.workers_ready_at = now
            launchers = [p for p in pods if p["metadata"]["labels"].get(ROLE_LABEL) == "launcher"]
            if any((p.get("status") or {}).get("phase") in ("Running", "Succeeded") for p in launchers):
                self.launcher_running_at = now
            self._stop.wait(POLL_S)


def _condition(pod: dict[str, Any], kind: str) -> bool:
    return any(
        c.get("type") == kind and c.get("status") == "True"
        for c in (pod.get("status") or {}).get("conditions") or ()
    )


def first_rank_wall_time(cluster: LocalCluster, namespace: str, name: str) -> float:
    """The container runtime's timestamp of the launcher log's first `rank R of N` line, as time.time()."""
    log = cluster.kubectl("-n", namespace, "logs", "--timestamps", f"job/{name}-launcher").stdout
    for line in log.splitlines():
        stamp, _, text = line.partition(" ")
        if text.startswith("rank ") and " of " in text:
            return _parse_rfc3339(stamp)
    raise AssertionError(f"no rank line in the launcher log of {name}:\n{log}")


def _parse_rfc3339(stamp: str) -> float:
    # Nanoseconds from the runtime; datetime takes microseconds.
    whole, _, fraction = stamp.rstrip("Z").partition(".")
    seconds = dt.datetime.fromisoformat(whole).replace(tzinfo=dt.UTC).timestamp()
    return seconds + (float(f"0.{fraction}") if fraction else 0.0)


def measure(cluster: LocalCluster, namespace: str, name: str, workers: int, agent: str) -> Breakdown:
    body = check_job(name, IMAGES["openmpi"], agent=agent, as_worker=False, workers=workers)
    timeline = Timeline(cluster.rest, namespace).start(expected_children=workers + SHARED_CHILDREN)
    pods = PodWatch(cluster, namespace, name, workers).start()
    job = Job(cluster, namespace, name)
    wall0, mono0 = time.time(), time.monotonic()
    try:
        job.submit(body)
        finished = wait_for(
            lambda: job.condition("Succeeded") or job.condition("Failed"),
            timeout=RUN_TIMEOUT,
            what=f"{name} to end",
        )
        assert finished is not None and finished["type"] == "Succeeded", f"{name}: {finished}"
        first_rank = mono0 + (first_rank_wall_time(cluster, namespace, name) - wall0)
    finally:
        pods.stop()
        timeline.stop()
    children = timeline.child_complete_at[name]
    launcher_job = timeline.launcher_at[name]
    ready, running = pods.workers_ready_at, pods.launcher_running_at
    assert ready is not None and running is not None, (ready, running)
    # The next job starts only once this one's pods are gone, so it never shares the node with them.
    cluster.rest.delete(job.path)
    pods_path = f"/api/v1/namespaces/{namespace}/pods?labelSelector={JOB_LABEL}={name}"
    wait_for(
        lambda: not cluster.rest.get(pods_path)["items"], timeout=RUN_TIMEOUT, what=f"{name}'s pods gone"
    )
    return Breakdown(
        workers=workers,
        agent=agent,
        total_s=first_rank - mono0,
        operator_s=(children - mono0) + max(0.0, launcher_job - ready),
        kubelet_s=(ready - children) + (running - launcher_job),
        mpi_s=first_rank - running,
        children_s=children - mono0,
        launcher_after_ready_s=max(0.0, launcher_job - ready),
    )


def table(rows: list[Breakdown]) -> str:
    lines = [
        f"{'workers':>7} {'agent':<5} {'total s':>8} {'operator s':>11} {'share':>6} {'children s':>11} "
        f"{'launcher s':>11} {'kubelet s':>10} {'MPI s':>7}   (medians; spread min-max of the total)"
    ]
    groups: dict[tuple[int, str], list[Breakdown]] = {}
    for row in rows:
        groups.setdefault((row.workers, row.agent), []).append(row)
    for (workers, agent), found in sorted(groups.items()):
        totals = [r.total_s for r in found]

        def med(attr: str, found: list[Breakdown] = found) -> float:
            return float(statistics.median(float(getattr(r, attr)) for r in found))

        share = statistics.median(r.operator_share for r in found)
        lines.append(
            f"{workers:>7} {agent:<5} {med('total_s'):>8.2f} {med('operator_s'):>11.2f} {share:>6.1%} "
            f"{med('children_s'):>11.2f} {med('launcher_after_ready_s'):>11.2f} "
            f"{med('kubelet_s'):>10.2f} {med('mpi_s'):>7.2f}   ({min(totals):.2f}-{max(totals):.2f}, {len(found)} runs)"
        )
    return "\n".join(lines)


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--sizes", default="2,16", help="workers per job, comma-separated")
    parser.add_argument("--agents", default="ssh,exec", help="launch agents, comma-separated")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument(
        "--operator-flags",
        default="",
        help="more flags for the operator, e.g. '--kube-api-qps=50 --kube-api-burst=100' (default: the operator's own defaults)",
    )
    parser.add_argument("--out", type=Path, default=Path("bench-results"))
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    sizes = [int(s) for s in args.sizes.split(",")]
    agents = args.agents.split(",")
    network = NodeNetwork.from_env()
    rows: list[Breakdown] = []
    with slot.holding(network.tag):
        cluster = LocalCluster("real", nodes=0, node_network=network)
        cluster.start()
        work = Path(tempfile.mkdtemp(prefix="mpioperator-breakdown-"))
        operator = OperatorProcess(
            cluster,
            args=(
                f"--lock-namespace={OPERATOR_NAMESPACE}",
                "--exec-agent",
                *shlex.split(args.operator_flags),
            ),
            workdir=work / "operator",
        )
        try:
            install_manifests(cluster)
            documents = exec_rbac_documents(cluster)
            cluster.kubectl("apply", "--server-side", "-f", "-", input=yaml.safe_dump_all(documents))
            operator.start()
            operator.wait_ready(timeout=90)
            namespace = "breakdown"
            cluster.rest.create("/api/v1/namespaces", {"metadata": {"name": namespace}})
            for agent in agents:
                warm = measure(cluster, namespace, f"warm-{agent}", 2, agent)
                print(f"warm-up ({agent}, 2 workers): {warm.total_s:.2f} s", flush=True)
            for round_ in range(args.rounds):
                for workers in sizes:
                    for agent in agents:
                        name = f"b{round_}-{agent}-{workers}"
                        row = measure(cluster, namespace, name, workers, agent)
                        rows.append(row)
                        print(f"{name}: {json.dumps(asdict(row))}", flush=True)
        finally:
            operator.terminate()
            cluster.stop()
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "real-breakdown.json").write_text(json.dumps([asdict(r) for r in rows], indent=1))
    print(table(rows))


if __name__ == "__main__":
    main()
