"""Cost at scale: memory with 1,000 MPIJobs and 9,000 pods cached, and start-up with 10,000 pods.

The 1,000 jobs are run by the contender itself (8 workers and a launcher each, running until deleted), so
its caches hold what a busy cluster's operator holds; 1,000 unrelated pending pods then bring the cluster
to 10,000 pods before the contender is restarted.
"""

from __future__ import annotations

import statistics
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from mpioperator.testing.install import OPERATOR_NAMESPACE
from mpioperator.testing.rest import RestError
from test.benchmarks.contenders import Contender
from test.benchmarks.scenarios import SUBMITTERS, Bench, Figures, bench_job, wait_alive, wait_quiet
from test.benchmarks.timeline import Timeline

SCALE_WORKERS = 8
STARTUP_PODS = 10_000
SETTLE_SAMPLES = 10


def _pod_count(bench: Bench) -> int:
    total, token = 0, ""
    while True:
        page = bench.cluster.rest.get(f"/api/v1/pods?limit=2000&continue={token}")
        total += len(page["items"])
        token = page["metadata"].get("continue", "")
        if not token:
            return total


def bystander_pod(name: str) -> dict[str, Any]:
    """A pod no scheduler picks up: it stays Pending and only fills caches."""
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "labels": {"app": "bystander"}},
        "spec": {
            "schedulerName": "bench-nobody",
            "containers": [{"name": "idle", "image": "registry.k8s.io/pause:3.10"}],
        },
    }


def steady_state(bench: Bench, contender: Contender, *, jobs: int) -> Figures:
    """Run `jobs` long-running MPIJobs; once every worker and launcher Job exists and the contender's
    writes have settled, sample its resident memory."""
    ns = bench.namespace("bench-steady")
    # Eight worker pods and the launcher Job per MPIJob; the Job's pod follows from kube-controller-manager.
    timeline = Timeline(bench.cluster.rest, ns, kinds=("pods", "jobs")).start(
        expected_children=SCALE_WORKERS + 1
    )
    cpu_before = contender.stats().cpu_seconds
    started = time.monotonic()
    bench.submit(ns, [bench_job(f"st-{i:04d}", SCALE_WORKERS, "24h") for i in range(jobs)])
    wait_alive(
        f"children of {jobs} MPIJobs",
        lambda: timeline.count(timeline.child_complete_at) == jobs,
        contender,
        timeout=120 + jobs * 2,
    )
    all_children = time.monotonic() - started
    wait_quiet(bench, timeout=60)
    timeline.stop()
    cpu_busy = contender.stats().cpu_seconds - cpu_before
    rss: list[int] = []
    idle_before = contender.stats().cpu_seconds
    # Sampled over a fixed window once everything exists: a steady-state reading, not a wait.
    for _ in range(SETTLE_SAMPLES):
        time.sleep(1.0)
        rss.append(contender.stats().rss_bytes)
    return {
        "steady_children_s": all_children,
        "steady_running_jobs": float(timeline.count(timeline.running_at)),
        "steady_cpu_s": cpu_busy,
        "steady_rss_b": float(statistics.median(rss)),
        "steady_idle_cpu_per_s": (contender.stats().cpu_seconds - idle_before) / SETTLE_SAMPLES,
        "steady_pods": float(_pod_count(bench)),
    }


def startup(bench: Bench, contender: Contender, workdir_factory: Any) -> Figures:
    """Top the cluster up to 10,000 pods, restart the contender, and time it to ready and to a new job."""
    missing = STARTUP_PODS - _pod_count(bench)
    if missing > 0:
        ns = bench.namespace("bench-bystanders")
        with ThreadPoolExecutor(SUBMITTERS) as pool:
            list(
                pool.map(
                    lambda i: bench.cluster.rest.create(
                        f"/api/v1/namespaces/{ns}/pods", bystander_pod(f"bystander-{i:05d}")
                    ),
                    range(missing),
                )
            )
    pods = _pod_count(bench)
    contender.stop()
    # A stopped upstream keeps its Lease until it expires; a restart after an upgrade or a crash-loop
    # back-off would find it expired, so both start against a free lock.
    try:
        bench.cluster.rest.delete(
            f"/apis/coordination.k8s.io/v1/namespaces/{OPERATOR_NAMESPACE}/leases/mpi-operator"
        )
    except RestError as exc:
        if exc.status != 404:
            raise
    ns = bench.namespace("bench-startup")
    timeline = Timeline(bench.cluster.rest, ns, kinds=("jobs",)).start(expected_children=1)
    bench.submit(ns, [bench_job("probe", 1, "24h")])
    started = time.monotonic()
    contender.start(bench.cluster, workdir_factory())
    contender.wait_ready(timeout=600)
    ready = time.monotonic() - started
    wait_alive(
        "the probe MPIJob's launcher Job", lambda: "probe" in timeline.launcher_at, contender, timeout=600
    )
    first_job = timeline.launcher_at["probe"] - started
    timeline.stop()
    stats = contender.stats()
    return {
        "startup_pods": float(pods),
        "startup_ready_s": ready,
        "startup_probe_s": first_job,
        "startup_cpu_s": stats.cpu_seconds,
        "startup_rss_b": float(stats.rss_bytes),
    }
