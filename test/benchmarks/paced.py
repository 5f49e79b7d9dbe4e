"""Cost per finished lifecycle: MPIJobs submitted a few at a time, each lane waiting for its last to end.

The throughput burst leaves upstream's queue minutes behind (every event of every job goes through its
rate limiter), so most of its jobs are unfinished when that run stops and its writes and CPU there cover
partial work. At this pace both operators finish every job, so writes and CPU per job compare like for
like. It runs first on a fresh operator: after the burst, upstream's limiter has reserved its tokens far
into the future.
"""

from __future__ import annotations

import threading
import time
from concurrent.futures import ThreadPoolExecutor

from mpioperator.testing.audit import LEASES, Writes
from mpioperator.testing.wait import WaitTimeout
from test.benchmarks.contenders import Contender
from test.benchmarks.scenarios import Bench, Figures, bench_job, wait_alive, wait_quiet, worker_pods
from test.benchmarks.timeline import Timeline

MPIJOBS_PATH = "/apis/kubeflow.org/v2beta1/namespaces/{ns}/mpijobs"
PACED_JOB_TIMEOUT_S = 120.0
CLEAN_UP_S = 300.0


def paced(
    bench: Bench,
    contender: Contender,
    *,
    jobs: int,
    workers: int,
    in_flight: int,
    warm_up: int = 0,
    job_timeout: float = PACED_JOB_TIMEOUT_S,
) -> tuple[Figures, Writes]:
    """`jobs` MPIJobs over `in_flight` lanes; a lane submits its next job once its last has Succeeded.

    `warm_up` jobs go through the same lanes first, in a namespace of their own, and are not counted: the
    first lifecycles on a fresh process pay one-off costs (lazy imports, connections, an interpreter's
    first passes over its code) that made the first round's figure stand apart from the others.
    A lane whose job is not Succeeded within `job_timeout` stops, and the figures say how many finished.
    """
    if warm_up:
        ns = bench.namespace("bench-paced-warm-up")
        timeline = Timeline(bench.cluster.rest, ns).start(expected_children=workers + 4)
        finished = _lanes(bench, contender, ns, timeline, "pw", warm_up, workers, in_flight, job_timeout)
        if finished == warm_up:
            _workers_left_after_clean_up(bench, contender, ns)
        timeline.stop()
    ns = bench.namespace("bench-paced")
    timeline = Timeline(bench.cluster.rest, ns).start(expected_children=workers + 4)
    writes_before = wait_quiet(bench) if warm_up else bench.writes()
    before = contender.stats()
    started = time.monotonic()
    finished = _lanes(bench, contender, ns, timeline, "pc", jobs, workers, in_flight, job_timeout)
    elapsed = time.monotonic() - started
    left = _workers_left_after_clean_up(bench, contender, ns) if finished == jobs else 0
    writes = wait_quiet(bench).minus(writes_before)
    after = contender.stats()
    timeline.stop()
    return {
        "paced_jobs": float(jobs),
        "paced_succeeded": float(finished),
        "paced_s": elapsed,
        "paced_cpu_s": after.cpu_seconds - before.cpu_seconds,
        "paced_writes": float(writes.total(excluding=LEASES)),
        "paced_workers_left": float(left),
    }, writes


def _workers_left_after_clean_up(bench: Bench, contender: Contender, ns: str) -> int:
    """Waits for the finished jobs' workers to be deleted; how many were still there at the deadline.

    Upstream with its default queue limits can be minutes behind by the end of the paced run (every
    event waits for a token at 10/s); its costs are then reported as partial, not the whole run lost.
    """
    try:
        wait_alive(
            "paced jobs' workers cleaned up", lambda: worker_pods(bench, ns) == 0, contender, CLEAN_UP_S
        )
    except WaitTimeout:
        return worker_pods(bench, ns)
    return 0


def _lanes(
    bench: Bench,
    contender: Contender,
    ns: str,
    timeline: Timeline,
    prefix: str,
    jobs: int,
    workers: int,
    in_flight: int,
    job_timeout: float,
) -> int:
    """Runs `jobs` MPIJobs over `in_flight` lanes; how many Succeeded."""
    pending = iter(f"{prefix}-{i:04d}" for i in range(jobs))
    lock = threading.Lock()

    def next_name() -> str | None:
        with lock:
            return next(pending, None)

    def lane() -> None:
        while (name := next_name()) is not None:
            bench.cluster.rest.create(MPIJOBS_PATH.format(ns=ns), bench_job(name, workers, "2s"))
            try:
                wait_alive(
                    f"MPIJob {name} Succeeded",
                    lambda name=name: name in timeline.succeeded_at,  # type: ignore[misc]
                    contender,
                    timeout=job_timeout,
                )
            except WaitTimeout:
                return

    with ThreadPoolExecutor(in_flight) as pool:
        for future in [pool.submit(lane) for _ in range(in_flight)]:
            future.result()
    return timeline.count(timeline.succeeded_at)
