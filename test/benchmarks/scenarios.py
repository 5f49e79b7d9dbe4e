"""The benchmark's scenarios, each run against one contender (on a fresh cluster of its own but for scale.py's).

Every scenario returns plain figures (seconds, bytes, counts) keyed by a short metric name; the runner
alternates contenders and the report turns the figures into a table and a chart.
"""

from __future__ import annotations

import contextlib
import json
import math
import subprocess
import sys
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mpioperator.testing.audit import LEASES, Writes, WritesTail, apiserver_audit_args
from mpioperator.testing.cluster import LocalCluster
from mpioperator.testing.install import OPERATOR_ACCOUNT, OPERATOR_NAMESPACE, REPO, install_manifests
from mpioperator.testing.mpijobs import mpijob
from mpioperator.testing.nodes import NodeShape
from mpioperator.testing.rest import RestError
from mpioperator.testing.wait import ProbeAborted, WaitTimeout, wait_for
from test.benchmarks.contenders import Contender
from test.benchmarks.timeline import Timeline

OPERATOR_USER = f"system:serviceaccount:{OPERATOR_NAMESPACE}:{OPERATOR_ACCOUNT}"
# Room for 48,000 pods on a few kwok nodes (the scale scenario's 5,000 MPIJobs make 25,000), so
# scheduling never waits for capacity.
BENCH_NODES = 12
BENCH_NODE_SHAPE = NodeShape(cpu="4000", memory="16Ti", pods="4000")
SUBMITTERS = 8
# How long after the last arrival to wait for the rest of the launcher Jobs before counting them as missing.
LATENCY_GIVE_UP_S = 120.0
Figures = dict[str, float]


@dataclass
class Bench:
    """A fresh full-tier cluster with the manifests installed and the operator's writes audited."""

    cluster: LocalCluster
    audit_log: Path
    _audit: WritesTail = field(init=False)

    def __post_init__(self) -> None:
        self._audit = WritesTail(self.audit_log, OPERATOR_USER)

    @classmethod
    def start(cls, workdir: Path) -> Bench:
        args, log = apiserver_audit_args(workdir / "audit", OPERATOR_USER)
        cluster = LocalCluster(
            "full",
            nodes=BENCH_NODES,
            node_shape=BENCH_NODE_SHAPE,
            apiserver_args=args,
            workdir=workdir / "cluster",
        )
        cluster.start()
        install_manifests(cluster)
        return cls(cluster, log)

    def stop(self) -> None:
        self.cluster.stop()

    def namespace(self, name: str) -> str:
        self.cluster.rest.create("/api/v1/namespaces", {"metadata": {"name": name}})
        return name

    def writes(self) -> Writes:
        return self._audit.read()

    def free_lock(self) -> None:
        """Delete the operator's Lease, as if a stopped operator's had expired: a restart after an
        upgrade or a crash-loop back-off finds it so (a stopped upstream keeps its Lease until then)."""
        try:
            self.cluster.rest.delete(
                f"/apis/coordination.k8s.io/v1/namespaces/{OPERATOR_NAMESPACE}/leases/mpi-operator"
            )
        except RestError as exc:
            if exc.status != 404:
                raise

    def submit(self, ns: str, bodies: list[dict[str, Any]]) -> dict[str, float]:
        """Create MPIJobs from a few threads at once; when each create was sent (monotonic)."""
        sent: dict[str, float] = {}

        def create(body: dict[str, Any]) -> None:
            sent[body["metadata"]["name"]] = time.monotonic()
            self.cluster.rest.create(f"/apis/kubeflow.org/v2beta1/namespaces/{ns}/mpijobs", body)

        with ThreadPoolExecutor(SUBMITTERS) as pool:
            list(pool.map(create, bodies))
        return sent


def bench_job(name: str, workers: int, runs_for: str) -> dict[str, Any]:
    """A pi-like MPIJob that cleans its running workers up when done, as the shipped examples do."""
    return mpijob(name, workers=workers, launcher_runs_for=runs_for, run_policy={"cleanPodPolicy": "Running"})


def wait_alive(what: str, probe: Callable[[], bool], contender: Contender | None, timeout: float) -> None:
    def check() -> bool:
        if contender is not None and not contender.alive():
            raise ProbeAborted(f"{contender.name} died:\n{contender.log_tail()}")
        return probe()

    wait_for(check, timeout=timeout, interval=0.2, what=what)


def wait_quiet(bench: Bench, *, quiet_for: float = 3.0, timeout: float = 120.0) -> Writes:
    """The operator's writes once none but lease renewals has arrived for `quiet_for` seconds, or at
    `timeout` if they never settle (upstream's backed-off retries can trickle on for minutes)."""
    last = bench.writes()
    last_change = deadline = time.monotonic()
    deadline += timeout
    while time.monotonic() < deadline and time.monotonic() - last_change < quiet_for:
        # Polling a log file the API server appends to; nothing here waits on the system under test.
        time.sleep(0.5)
        now = bench.writes()
        if now.total(excluding=LEASES) != last.total(excluding=LEASES):
            last, last_change = now, time.monotonic()
    return last


def worker_pods(bench: Bench, ns: str) -> int:
    pods = bench.cluster.rest.get(
        f"/api/v1/namespaces/{ns}/pods?labelSelector=training.kubeflow.org/job-role%3Dworker"
    )
    return len(pods["items"])


def throughput(
    bench: Bench, contender: Contender, *, jobs: int, workers: int, finish_within: float
) -> tuple[Figures, Writes]:
    """`jobs` MPIJobs of `workers` workers submitted at once: when all children exist, all run, all end.

    Reaching Running and Succeeded needs the contender to sync each job again after its pods change;
    a contender that has not got there within `finish_within` seconds of the submission is reported
    with how many it had done (the figure is then a lower bound), instead of being waited for.
    """
    ns = bench.namespace("bench-throughput")
    timeline = Timeline(bench.cluster.rest, ns).start(expected_children=workers + 4)
    before, writes_before = contender.stats(), bench.writes()
    started = time.monotonic()
    bench.submit(ns, [bench_job(f"tp-{i:04d}", workers, "5s") for i in range(jobs)])
    submitted = time.monotonic() - started
    wait_alive(
        f"children of {jobs} MPIJobs",
        lambda: timeline.count(timeline.child_complete_at) == jobs,
        contender,
        timeout=60 + jobs * 3,
    )
    try:
        wait_alive(
            f"{jobs} MPIJobs Succeeded",
            lambda: timeline.count(timeline.succeeded_at) == jobs,
            contender,
            timeout=max(1.0, started + finish_within - time.monotonic()),
        )
        wait_alive(
            "finished jobs' workers cleaned up", lambda: worker_pods(bench, ns) == 0, contender, timeout=300
        )
    except WaitTimeout:
        pass
    writes = wait_quiet(bench).minus(writes_before)
    after = contender.stats()
    timeline.stop()
    figures = {
        "submit_s": submitted,
        "children_s": max(timeline.child_complete_at.values()) - started,
        "running_s": _all_by(timeline.running_at, jobs, started),
        "succeeded_s": _all_by(timeline.succeeded_at, jobs, started),
        "running_jobs": float(len(timeline.running_at)),
        "succeeded_jobs": float(len(timeline.succeeded_at)),
        "finish_within_s": finish_within,
        "cpu_s": after.cpu_seconds - before.cpu_seconds,
        "peak_rss_b": float(after.peak_rss_bytes),
        "watch_errors": float(len(timeline.watch_errors)),
    }
    return figures, writes


def _all_by(seen: dict[str, float], jobs: int, started: float) -> float:
    """Seconds from `started` until all `jobs` were seen; NaN if some never were."""
    return max(seen.values()) - started if len(seen) == jobs else float("nan")


def percentile(values: list[float], q: float) -> float:
    """Nearest-rank percentile: the smallest value with at least q% of the values at or below it."""
    ordered = sorted(values)
    rank = max(1, -(-len(ordered) * q // 100))
    return ordered[int(rank) - 1]


def latency(
    bench: Bench,
    contender: Contender,
    *,
    rate: float,
    seconds: float,
    workers: int,
    namespace: str = "bench-latency",
) -> Figures:
    """MPIJobs arriving at `rate` per second, each timed from its create to its launcher Job appearing.

    The arrivals themselves, their workers starting and earlier jobs finishing are the background load.
    """
    ns = bench.namespace(namespace)
    timeline = Timeline(bench.cluster.rest, ns, kinds=("jobs",)).start(expected_children=1)
    count = int(rate * seconds)
    sent: dict[str, float] = {}

    def create(body: dict[str, Any]) -> None:
        sent[body["metadata"]["name"]] = time.monotonic()
        bench.cluster.rest.create(f"/apis/kubeflow.org/v2beta1/namespaces/{ns}/mpijobs", body)

    started = time.monotonic()
    with ThreadPoolExecutor(SUBMITTERS) as pool:
        futures = []
        for i in range(count):
            # Pacing the arrivals: the open-loop schedule, not a wait for the system under test.
            time.sleep(max(0.0, started + i / rate - time.monotonic()))
            futures.append(pool.submit(create, bench_job(f"lat-{i:04d}", workers, "10s")))
        for future in futures:
            future.result()
    with contextlib.suppress(WaitTimeout):
        wait_alive(
            f"launcher Jobs of {count} MPIJobs",
            lambda: timeline.count(timeline.launcher_at) == count,
            contender,
            timeout=LATENCY_GIVE_UP_S,
        )
    timeline.stop()
    # A launcher that never appeared counts as infinitely late: it pushes the percentiles up, never down.
    samples = [timeline.launcher_at.get(name, math.inf) - at for name, at in sent.items()]
    return {
        "latency_p50_s": percentile(samples, 50),
        "latency_p99_s": percentile(samples, 99),
        "latency_max_s": max(samples),
        "latency_samples": float(len(samples)),
        "latency_missing": float(sum(1 for v in samples if v == math.inf)),
    }


def bare_client_limit(bench: Bench, *, jobs: int, workers: int, concurrency: int) -> Figures:
    """The same objects as the throughput scenario, created by a controller-less client as fast as it can."""
    ns = bench.namespace("bench-throughput")
    timeline = Timeline(bench.cluster.rest, ns).start(expected_children=workers + 4)
    argv = [
        sys.executable,
        "-m",
        "test.benchmarks.bare_client",
        f"--server={bench.cluster.server}",
        f"--token={bench.cluster.token}",
        f"--ca-file={bench.cluster.ca_file}",
        f"--namespace={ns}",
        f"--jobs={jobs}",
        f"--workers={workers}",
        f"--concurrency={concurrency}",
    ]
    with subprocess.Popen(argv, cwd=REPO, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True) as client:
        assert client.stdin is not None and client.stdout is not None
        if client.stdout.readline().strip() != "ready":
            raise RuntimeError("the bare client did not start")
        started = time.monotonic()
        client.stdin.write("go\n")
        client.stdin.flush()
        wait_alive(
            f"children of {jobs} MPIJobs",
            lambda: timeline.count(timeline.child_complete_at) == jobs,
            None,
            timeout=60 + jobs * 3,
        )
        reported = json.loads(client.stdout.readline())
    timeline.stop()
    return {
        "children_s": max(timeline.child_complete_at.values()) - started,
        "client_elapsed_s": float(reported["elapsed_s"]),
    }
