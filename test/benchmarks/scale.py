"""Cost at scale: thousands of long-running MPIJobs, grown in stages, and restarts among them.

One contender on a fresh cluster of its own runs MPIJobs of 4 workers (plus a launcher pod each) that
keep running until deleted, so its caches hold what a busy cluster's operator holds:

1. 1,000 MPIJobs (5,000 pods): time until every child exists, CPU, writes, resident memory;
2. 1,000 more (10,000 pods), then a restart: time to ready and to a new job's launcher Job;
3. 3,000 more (5,000 MPIJobs, 25,000 pods): the same figures as 1;
4. MPIJobs arriving at a steady rate among the 5,000: create to launcher Job, p50 and p99;
5. a restart with all of them: time to ready and to a new job's launcher Job.

How each cost grows from 1,000 to 5,000 jobs comes from stages 1 and 2+3: CPU and writes per job added
in each, and resident memory per job at 1,000 and 5,000.
"""

from __future__ import annotations

import json
import statistics
import time
from collections.abc import Callable
from pathlib import Path

from mpioperator.testing.audit import LEASES
from test.benchmarks.contenders import Contender
from test.benchmarks.scenarios import Bench, Figures, bench_job, latency, wait_alive, wait_quiet
from test.benchmarks.timeline import Timeline

SCALE_WORKERS = 4
# What the stages are called in the figures, and the jobs each adds by default.
STAGE_NAMES = ("first", "restart", "rest")
STAGE_JOBS = (1000, 1000, 3000)
RSS_SAMPLES = 10
# Restarts per start-up figure: one restart's time to ready varied by half on this 2-core machine.
READY_SAMPLES = 5


def pod_count(bench: Bench) -> int:
    total, token = 0, ""
    while True:
        page = bench.cluster.rest.get(f"/api/v1/pods?limit=5000&continue={token}")
        total += len(page["items"])
        token = page["metadata"].get("continue", "")
        if not token:
            return total


def _rss(contender: Contender) -> float:
    """Median resident memory over a fixed window once nothing is changing: a reading, not a wait."""
    samples = []
    for _ in range(RSS_SAMPLES):
        time.sleep(1.0)
        samples.append(contender.stats().rss_bytes)
    return float(statistics.median(samples))


def grow(bench: Bench, contender: Contender, *, stage: str, jobs: int, workers: int) -> Figures:
    """Add `jobs` long-running MPIJobs in a namespace of their own; when all their children exist and
    the contender's writes have settled: time, CPU and writes spent, and resident memory."""
    ns = bench.namespace(f"bench-scale-{stage}")
    # The workers and the launcher Job per MPIJob; the Job's pod follows from kube-controller-manager.
    timeline = Timeline(bench.cluster.rest, ns, kinds=("pods", "jobs")).start(expected_children=workers + 1)
    cpu_before, writes_before = contender.stats().cpu_seconds, bench.writes()
    started = time.monotonic()
    bench.submit(ns, [bench_job(f"{stage}-{i:04d}", workers, "24h") for i in range(jobs)])
    wait_alive(
        f"children of {jobs} MPIJobs",
        lambda: timeline.count(timeline.child_complete_at) == jobs,
        contender,
        timeout=300 + jobs * 2,
    )
    children = max(timeline.child_complete_at.values()) - started
    writes = wait_quiet(bench, timeout=300).minus(writes_before)
    timeline.stop()
    cpu = contender.stats().cpu_seconds - cpu_before
    return {
        f"scale_{stage}_jobs": float(jobs),
        f"scale_{stage}_children_s": children,
        f"scale_{stage}_cpu_s": cpu,
        f"scale_{stage}_writes": float(writes.total(excluding=LEASES)),
        f"scale_{stage}_rss_b": _rss(contender),
        f"scale_{stage}_pods": float(pod_count(bench)),
    }


def time_to_ready(bench: Bench, contender: Contender, workdir: Path) -> tuple[float, float]:
    """Stop the contender and start it again: when it started (monotonic) and how long until it logged
    it was ready."""
    contender.stop()
    bench.free_lock()
    started, started_wall = time.monotonic(), time.time()
    contender.start(bench.cluster, workdir)
    contender.wait_ready(timeout=600)
    return started, contender.ready_at() - started_wall


def restart(
    bench: Bench,
    contender: Contender,
    workdirs: Callable[[], Path],
    *,
    prefix: str,
    samples: int = READY_SAMPLES,
) -> Figures:
    """Restart the contender `samples` times: the median time to ready, with the fastest and slowest; on
    the last restart, a probe MPIJob submitted while it was down: the time to its launcher Job, and the
    CPU and memory by then."""
    pods = pod_count(bench)
    readies = [time_to_ready(bench, contender, workdirs())[1] for _ in range(samples - 1)]
    contender.stop()
    ns = bench.namespace(f"bench-{prefix.replace('_', '-')}")
    timeline = Timeline(bench.cluster.rest, ns, kinds=("jobs",)).start(expected_children=1)
    bench.submit(ns, [bench_job("probe", 1, "24h")])
    started, ready = time_to_ready(bench, contender, workdirs())
    readies.append(ready)
    wait_alive(
        "the probe MPIJob's launcher Job", lambda: "probe" in timeline.launcher_at, contender, timeout=600
    )
    first_job = timeline.launcher_at["probe"] - started
    timeline.stop()
    stats = contender.stats()
    return {
        f"{prefix}_pods": float(pods),
        f"{prefix}_ready_s": statistics.median(readies),
        f"{prefix}_ready_min_s": min(readies),
        f"{prefix}_ready_max_s": max(readies),
        f"{prefix}_probe_s": first_job,
        f"{prefix}_cpu_s": stats.cpu_seconds,
        f"{prefix}_rss_b": float(stats.rss_bytes),
    }


def scale(
    bench: Bench,
    contender: Contender,
    workdirs: Callable[[], Path],
    *,
    stage_jobs: tuple[int, int, int] = STAGE_JOBS,
    workers: int = SCALE_WORKERS,
    arrival_rate: float = 2.0,
    arrival_seconds: float = 30.0,
    log: Callable[[str], None] = print,
) -> Figures:
    """The stages above on a ready contender; stage two ends with the start-up restart."""
    (first, second, third), (first_jobs, second_jobs, third_jobs) = STAGE_NAMES, stage_jobs
    wait_quiet(bench)
    figures: Figures = {"scale_base_rss_b": _rss(contender), "scale_workers": float(workers)}
    log(f"{contender.name}: scale, {first_jobs} MPIJobs x {workers}")
    figures |= grow(bench, contender, stage=first, jobs=first_jobs, workers=workers)
    log(f"{contender.name}: scale, {second_jobs} more, then a restart")
    figures |= grow(bench, contender, stage=second, jobs=second_jobs, workers=workers)
    figures |= restart(bench, contender, workdirs, prefix="startup")
    log(f"{contender.name}: so far {json.dumps({k: round(v, 3) for k, v in figures.items()})}")
    log(f"{contender.name}: scale, {third_jobs} more")
    figures |= grow(bench, contender, stage=third, jobs=third_jobs, workers=workers)
    log(f"{contender.name}: scale, arrivals at {arrival_rate}/s among them")
    arrivals = latency(bench, contender, rate=arrival_rate, seconds=arrival_seconds, workers=workers)
    figures |= {f"scale_{key}": value for key, value in arrivals.items()}
    log(f"{contender.name}: scale, a restart with all of them")
    figures |= restart(bench, contender, workdirs, prefix="scale_startup")
    figures["scale_jobs"] = float(first_jobs + second_jobs + third_jobs)
    return figures
