"""Cost at scale: thousands of long-running MPIJobs, grown in stages, both operators on one cluster in turn.

One cluster holds MPIJobs of 4 workers (plus a launcher pod each) that keep running until deleted. The
contenders take turns on it: only one runs at a time, each started from a free Lease (as after an expired
one), so what the cluster itself is busy with when one starts (kube-scheduler retrying pods that do not
fit, the API server's own size) is what the other met too. Two clusters of their own were not equally
busy, and on 2 cores that load decided most of the start-up figure.

Each contender adds its jobs in namespaces of its own, and each one's caches hold every job on the
cluster, the other's too: the cluster holds twice the stage totals, 10,000 MPIJobs and 50,000 pods at the
default stages. In each stage the contenders take turns (ours first, then upstream first twice:
STAGE_TURNS); each is started, or already running, waits until it is ready and its writes have settled (its
start-up on the other's jobs is not counted), adds the stage's jobs and is measured:

1. 1,000 MPIJobs each: time until every child exists, CPU, writes, resident memory once quiet;
2. 1,000 more each, then restarts on the same cluster: each contender `READY_SAMPLES` times, interleaved
   (A, B, B, A, A, B, ...) so neither always goes first, then each one's probe (an MPIJob submitted
   while it was down): time to ready and to the probe's launcher Job;
3. 3,000 more each (10,000 MPIJobs on the cluster), the same figures as 1;
4. MPIJobs arriving at a steady rate among them, each contender in turn: create to launcher Job (each
   kept running until its arrivals have Succeeded, so the next does not finish them);
5. the restarts of 2 again with all of them.

Resident memory right after a contender's own growth is read at a different cluster size for each (the
one that went second also holds the first's new jobs), so the readings compared are taken after stages 1
and 3, when the cluster is the same for both: each contender started again on it and left until quiet.
A probe MPIJob is deleted with its children (foreground) before the next contender's probe, so every
probe restart sees the cluster the first did; the cluster's MPIJob and pod counts are in the figures.
"""

from __future__ import annotations

import json
import re
import statistics
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

from mpioperator.testing.audit import LEASES
from mpioperator.testing.wait import WaitTimeout, wait_for
from test.benchmarks.contenders import Contender
from test.benchmarks.scenarios import (
    LATENCY_GIVE_UP_S,
    Bench,
    Figures,
    bench_job,
    latency,
    wait_alive,
    wait_quiet,
)
from test.benchmarks.timeline import Timeline, condition_true

SCALE_WORKERS = 4
# What the stages are called in the figures, and the jobs each adds by default.
STAGE_NAMES = ("first", "restart", "rest")
STAGE_JOBS = (1000, 1000, 3000)
# Which contender grows first in each stage (in_turn's turn): the first grows on the smaller cluster. The
# growth rows the report shows are stage one's and stage three's children rate (CPU and writes: stage one,
# stages two and three), so the first contender leads stage one and the second the two after it.
STAGE_TURNS = (0, 1, 1)
RSS_SAMPLES = 10
# Restarts per start-up figure: one restart's time to ready varied by half on this 2-core machine.
READY_SAMPLES = 5
MPIJOBS = "/apis/kubeflow.org/v2beta1/mpijobs"
# Seconds for a contender's writes to settle after it starts: upstream's start-up on thousands of jobs
# it did not make, and its backed-off retries, take longer than a quiet cluster's two minutes.
QUIET_TIMEOUT_S = 300.0

T = TypeVar("T")


def in_turn(contenders: Sequence[T], turn: int) -> list[T]:
    """The order of one turn: as given on even turns, reversed on odd ones."""
    return list(contenders) if turn % 2 == 0 else list(reversed(contenders))


def interleaved(contenders: Sequence[T], rounds: int, *, first_turn: int = 0) -> list[T]:
    """`rounds` turns one after the other (A, B, then B, A, ...): each goes first in half the rounds, and
    the one that went last in a round goes first in the next."""
    return [c for n in range(rounds) for c in in_turn(contenders, first_turn + n)]


def short_name(name: str) -> str:
    """A contender's name as part of a namespace: its first word ("upstream v0.8.2" -> "upstream")."""
    return re.sub(r"[^a-z0-9]+", "-", name.split()[0].lower()).strip("-")


def stage_namespace(stage: str, contender: str) -> str:
    return f"bench-scale-{stage}-{short_name(contender)}"


def _count(bench: Bench, path: str) -> int:
    total, token = 0, ""
    while True:
        page = bench.cluster.rest.get(f"{path}?limit=5000&continue={token}")
        total += len(page["items"])
        token = page["metadata"].get("continue", "")
        if not token:
            return total


def pod_count(bench: Bench) -> int:
    return _count(bench, "/api/v1/pods")


def mpijob_count(bench: Bench) -> int:
    return _count(bench, MPIJOBS)


def _rss(contender: Contender) -> float:
    """Median resident memory over a fixed window once nothing is changing: a reading, not a wait."""
    samples = []
    for _ in range(RSS_SAMPLES):
        time.sleep(1.0)
        samples.append(contender.stats().rss_bytes)
    return float(statistics.median(samples))


def grow(
    bench: Bench, contender: Contender, *, stage: str, jobs: int, workers: int, namespace: str | None = None
) -> Figures:
    """Add `jobs` long-running MPIJobs in a namespace of their own; when all their children exist and
    the contender's writes have settled: time, CPU and writes spent, and resident memory (with the
    MPIJobs on the cluster at that reading, which other contenders' jobs add to)."""
    ns = bench.namespace(namespace or f"bench-scale-{stage}")
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
    writes = wait_quiet(bench, timeout=QUIET_TIMEOUT_S).minus(writes_before)
    timeline.stop()
    cpu = contender.stats().cpu_seconds - cpu_before
    return {
        f"scale_{stage}_jobs": float(jobs),
        f"scale_{stage}_children_s": children,
        f"scale_{stage}_cpu_s": cpu,
        f"scale_{stage}_writes": float(writes.total(excluding=LEASES)),
        f"scale_{stage}_rss_b": _rss(contender),
        f"scale_{stage}_cluster_jobs": float(mpijob_count(bench)),
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


class OneAtATime:
    """The contenders sharing one cluster, at most one of them running."""

    def __init__(self, bench: Bench, contenders: Sequence[Contender], workdirs: Callable[[], Path]) -> None:
        self.bench = bench
        self.contenders = list(contenders)
        self.workdirs = workdirs
        self.running: Contender | None = None

    def run(self, contender: Contender, *, again: bool = False) -> None:
        """Make `contender` the one running and ready: the other is stopped first, the Lease freed.
        `again` starts it afresh even if it is running."""
        if self.running is contender and not again:
            return
        self.stop()
        time_to_ready(self.bench, contender, self.workdirs())
        self.running = contender

    def stop(self) -> None:
        for contender in self.contenders:
            contender.stop()
        self.running = None


@dataclass(frozen=True)
class RestartSample:
    contender: str
    round: int
    ready_s: float
    cpu_s: float
    peak_rss_b: float


def restart_rounds(
    bench: Bench,
    contenders: Sequence[Contender],
    workdirs: Callable[[], Path],
    rounds: int,
    *,
    first_turn: int = 0,
    on_sample: Callable[[RestartSample], None] = lambda sample: None,
) -> list[RestartSample]:
    """Each contender started `rounds` times on the cluster as it is, in interleaved order, each from a
    free Lease and stopped once ready: its time to ready, and the CPU and peak RSS spent by then. Every
    contender must be stopped before."""
    samples = []
    for n, contender in enumerate(interleaved(contenders, rounds, first_turn=first_turn)):
        try:
            _, ready = time_to_ready(bench, contender, workdirs())
            stats = contender.stats()
        finally:
            contender.stop()
        sample = RestartSample(
            contender.name, n // len(contenders) + 1, ready, stats.cpu_seconds, float(stats.peak_rss_bytes)
        )
        samples.append(sample)
        on_sample(sample)
    return samples


def _delete_mpijob(bench: Bench, ns: str, name: str, log: Callable[[str], None]) -> None:
    """Delete an MPIJob and, first, its children (foreground), and wait until it is gone."""
    path = f"/apis/kubeflow.org/v2beta1/namespaces/{ns}/mpijobs/{name}"
    bench.cluster.rest.delete(path, {"propagationPolicy": "Foreground"})
    try:
        wait_for(lambda: not bench.cluster.rest.exists(path), timeout=300, what=f"MPIJob {ns}/{name} deleted")
    except WaitTimeout:
        log(
            f"MPIJob {ns}/{name} still there after 300 s: the next restarts see it (counted in their figures)"
        )


def probe(
    bench: Bench,
    contender: Contender,
    workdirs: Callable[[], Path],
    *,
    prefix: str,
    log: Callable[[str], None] = print,
) -> Figures:
    """With every contender stopped: an MPIJob submitted, then `contender` started; its time to ready and
    to the MPIJob's launcher Job, and its CPU and memory by then. Stopped after, the MPIJob deleted."""
    ns = bench.namespace(f"bench-{prefix.replace('_', '-')}-{short_name(contender.name)}")
    timeline = Timeline(bench.cluster.rest, ns, kinds=("jobs",)).start(expected_children=1)
    try:
        bench.submit(ns, [bench_job("probe", 1, "24h")])
        started, ready = time_to_ready(bench, contender, workdirs())
        wait_alive(
            "the probe MPIJob's launcher Job", lambda: "probe" in timeline.launcher_at, contender, timeout=600
        )
        first_job = timeline.launcher_at["probe"] - started
        stats = contender.stats()
    finally:
        timeline.stop()
        contender.stop()
    _delete_mpijob(bench, ns, "probe", log)
    return {
        f"{prefix}_probe_ready_s": ready,
        f"{prefix}_probe_s": first_job,
        f"{prefix}_cpu_s": stats.cpu_seconds,
        f"{prefix}_rss_b": float(stats.rss_bytes),
    }


def restarts(
    bench: Bench,
    turns: OneAtATime,
    *,
    prefix: str,
    first_turn: int,
    samples: int = READY_SAMPLES,
    log: Callable[[str], None] = print,
) -> dict[str, Figures]:
    """Every contender restarted `samples` times on the same cluster, interleaved: the median time to
    ready with the fastest and slowest; then each one's probe, in turn."""
    turns.stop()
    on_cluster = {f"{prefix}_pods": float(pod_count(bench)), f"{prefix}_jobs": float(mpijob_count(bench))}
    readies: dict[str, list[float]] = {c.name: [] for c in turns.contenders}
    for sample in restart_rounds(bench, turns.contenders, turns.workdirs, samples, first_turn=first_turn):
        readies[sample.contender].append(sample.ready_s)
    figures: dict[str, Figures] = {}
    for contender in in_turn(turns.contenders, first_turn):
        ready = readies[contender.name]
        figures[contender.name] = on_cluster | {
            f"{prefix}_ready_s": statistics.median(ready),
            f"{prefix}_ready_min_s": min(ready),
            f"{prefix}_ready_max_s": max(ready),
        }
        figures[contender.name] |= probe(bench, contender, turns.workdirs, prefix=prefix, log=log)
    return figures


def _started_rss(
    bench: Bench, turns: OneAtATime, order: Sequence[Contender], stage: str
) -> dict[str, Figures]:
    """Each contender started afresh on the cluster as it is, in turn: its resident memory once quiet."""
    figures: dict[str, Figures] = {}
    for contender in order:
        turns.run(contender, again=True)
        wait_quiet(bench, timeout=QUIET_TIMEOUT_S)
        figures[contender.name] = {
            f"scale_{stage}_started_rss_b": _rss(contender),
            f"scale_{stage}_started_jobs": float(mpijob_count(bench)),
        }
    return figures


def _finish_arrivals(bench: Bench, contender: Contender, ns: str, log: Callable[[str], None]) -> None:
    """Keep the contender running until the MPIJobs that arrived in `ns` have Succeeded (their launchers
    run 10 s), so the next contender does not meet their ends as work of its own."""
    path = f"/apis/kubeflow.org/v2beta1/namespaces/{ns}/mpijobs"

    def unfinished() -> int:
        return sum(1 for job in bench.cluster.rest.get(path)["items"] if not condition_true(job, "Succeeded"))

    try:
        wait_alive(
            f"arrivals in {ns} Succeeded", lambda: unfinished() == 0, contender, timeout=LATENCY_GIVE_UP_S
        )
    except WaitTimeout:
        log(
            f"{contender.name}: {unfinished()} arrivals in {ns} not Succeeded; the next contender finishes them"
        )
    wait_quiet(bench, timeout=QUIET_TIMEOUT_S)


def _merge(figures: dict[str, Figures], more: dict[str, Figures]) -> None:
    for name, values in more.items():
        figures[name] |= values


def scale(
    bench: Bench,
    contenders: Sequence[Contender],
    workdirs: Callable[[], Path],
    *,
    stage_jobs: tuple[int, int, int] = STAGE_JOBS,
    workers: int = SCALE_WORKERS,
    arrival_rate: float = 2.0,
    arrival_seconds: float = 30.0,
    log: Callable[[str], None] = print,
) -> dict[str, Figures]:
    """The stages above on one cluster, every contender in turn; the figures by contender name.
    Every contender is stopped when it returns."""
    turns = OneAtATime(bench, contenders, workdirs)
    shared = len(contenders) > 1
    figures: dict[str, Figures] = {
        c.name: {"scale_workers": float(workers), "scale_contenders": float(len(contenders))}
        for c in contenders
    }
    try:
        # In the reverse of stage 1's order, so stage 1's first contender is the one left running.
        for contender in in_turn(contenders, 1):
            turns.run(contender)
            wait_quiet(bench, timeout=QUIET_TIMEOUT_S)
            figures[contender.name]["scale_base_rss_b"] = _rss(contender)
        for turn, stage, jobs in zip(STAGE_TURNS, STAGE_NAMES, stage_jobs, strict=True):
            for contender in in_turn(contenders, turn):
                log(f"scale, stage {stage}: {contender.name}, {jobs} MPIJobs x {workers}")
                turns.run(contender)
                wait_quiet(bench, timeout=QUIET_TIMEOUT_S)
                figures[contender.name] |= grow(
                    bench,
                    contender,
                    stage=stage,
                    jobs=jobs,
                    workers=workers,
                    namespace=stage_namespace(stage, contender.name),
                )
            if shared and stage != "restart":
                log(f"scale, stage {stage}: each started again on the same cluster, for its memory")
                # In the stage's order: its last contender, running, goes last again and is left running.
                _merge(figures, _started_rss(bench, turns, in_turn(contenders, turn), stage))
            if stage == "restart":
                log(f"scale: restarts, {READY_SAMPLES} each, interleaved, then the probes")
                _merge(figures, restarts(bench, turns, prefix="startup", first_turn=0, log=log))
                for name, values in figures.items():
                    log(f"{name}: so far {json.dumps({k: round(v, 3) for k, v in values.items()})}")
        # The reverse of stage 3's order: the contender left running goes first.
        for contender in in_turn(contenders, STAGE_TURNS[-1] + 1):
            log(f"scale: {contender.name}, arrivals at {arrival_rate}/s among them")
            turns.run(contender)
            wait_quiet(bench, timeout=QUIET_TIMEOUT_S)
            ns = f"bench-scale-latency-{short_name(contender.name)}"
            arrivals = latency(
                bench, contender, rate=arrival_rate, seconds=arrival_seconds, workers=workers, namespace=ns
            )
            _finish_arrivals(bench, contender, ns, log)
            figures[contender.name] |= {f"scale_{key}": value for key, value in arrivals.items()}
        log("scale: restarts with all of them")
        _merge(figures, restarts(bench, turns, prefix="scale_startup", first_turn=1, log=log))
    finally:
        turns.stop()
    for values in figures.values():
        values["scale_jobs"] = float(sum(stage_jobs))
    return figures
