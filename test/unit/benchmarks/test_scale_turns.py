"""The scale scenario's turns on one cluster: the order of contenders per stage and per restart, the
namespaces each contender's jobs go to, and that only one contender runs at a time."""

from __future__ import annotations

import argparse
import re
from pathlib import Path
from typing import Any, cast

from test.benchmarks.bench_operators import _scale_title, _sharing
from test.benchmarks.contenders import Contender, ProcStats
from test.benchmarks.scale import (
    STAGE_NAMES,
    STAGE_TURNS,
    OneAtATime,
    in_turn,
    interleaved,
    restart_rounds,
    short_name,
    stage_namespace,
)
from test.benchmarks.scenarios import Bench

DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")


def test_restarts_interleave_so_neither_always_goes_first() -> None:
    assert interleaved(["A", "B"], 5) == ["A", "B", "B", "A", "A", "B", "B", "A", "A", "B"]
    assert interleaved(["A", "B"], 2, first_turn=1) == ["B", "A", "A", "B"]


def test_each_contender_grows_first_in_one_of_the_reported_growth_stages() -> None:
    first = {
        stage: in_turn(["ours", "upstream"], turn)[0]
        for stage, turn in zip(STAGE_NAMES, STAGE_TURNS, strict=True)
    }
    # Stage one's and stage three's rows are the growth figures: one led by each contender.
    assert {first["first"], first["rest"]} == {"ours", "upstream"}


def test_one_contender_takes_every_turn_alone() -> None:
    assert interleaved(["ours"], 3) == ["ours", "ours", "ours"]


def test_each_contender_grows_in_a_namespace_of_its_own_per_stage() -> None:
    assert short_name("upstream v0.8.2") == "upstream"
    names = {stage_namespace(stage, c) for stage in STAGE_NAMES for c in ("mpioperator", "upstream v0.8.2")}
    assert "bench-scale-first-upstream" in names and "bench-scale-rest-mpioperator" in names
    assert len(names) == 6
    assert all(DNS_LABEL.match(ns) and len(ns) <= 63 for ns in names)


class FakeBench:
    def __init__(self, events: list[str]) -> None:
        self.events = events
        self.cluster = object()

    def free_lock(self) -> None:
        self.events.append("free lock")


class FakeContender:
    """Records its starts and stops in the shared list; fails if started while another one runs."""

    def __init__(self, name: str, events: list[str], running: set[str]) -> None:
        self.name = name
        self.events = events
        self.running = running
        self.starts = 0

    def start(self, cluster: object, workdir: Path) -> None:
        assert not self.running, f"{self.name} started while {self.running} ran"
        self.running.add(self.name)
        self.starts += 1
        self.events.append(f"start {self.name}")

    def wait_ready(self, timeout: float) -> None:
        pass

    def ready_at(self) -> float:
        return 0.0

    def stats(self) -> ProcStats:
        return ProcStats(cpu_seconds=float(self.starts), rss_bytes=1, peak_rss_bytes=2**20 * self.starts)

    def alive(self) -> bool:
        return self.name in self.running

    def stop(self) -> None:
        if self.name in self.running:
            self.running.discard(self.name)
            self.events.append(f"stop {self.name}")

    def log_tail(self) -> str:
        return ""


def fakes() -> tuple[list[str], Bench, list[Contender]]:
    events: list[str] = []
    running: set[str] = set()
    contenders = [cast(Contender, FakeContender(n, events, running)) for n in ("ours", "upstream")]
    return events, cast(Bench, cast(Any, FakeBench(events))), contenders


def test_restart_rounds_start_each_from_a_free_lock_one_at_a_time_in_interleaved_order(
    tmp_path: Path,
) -> None:
    events, bench, contenders = fakes()
    samples = restart_rounds(bench, contenders, lambda: tmp_path, 2)

    assert [(s.contender, s.round) for s in samples] == [
        ("ours", 1),
        ("upstream", 1),
        ("upstream", 2),
        ("ours", 2),
    ]
    assert events == [
        step
        for name in ("ours", "upstream", "upstream", "ours")
        for step in ("free lock", f"start {name}", f"stop {name}")
    ]
    assert [s.peak_rss_b / 2**20 for s in samples] == [1.0, 1.0, 2.0, 2.0]


def test_running_the_other_contender_stops_the_one_running_and_frees_the_lock(tmp_path: Path) -> None:
    events, bench, (ours, upstream) = fakes()
    turns = OneAtATime(bench, [ours, upstream], lambda: tmp_path)

    turns.run(ours)
    turns.run(ours)
    turns.run(upstream)
    turns.run(upstream, again=True)
    turns.stop()

    assert events == [
        "free lock",
        "start ours",
        "stop ours",
        "free lock",
        "start upstream",
        "stop upstream",
        "free lock",
        "start upstream",
        "stop upstream",
    ]
    assert turns.running is None


def test_the_scale_title_says_the_cluster_holds_every_contenders_jobs() -> None:
    args = argparse.Namespace(scale_stages=(1000, 1000, 3000))
    shared = _scale_title(args, _sharing({"a": {"scale_contenders": 2.0}, "b": {"scale_contenders": 2.0}}))
    assert "ONE cluster" in shared and "10,000 MPIJobs / 50,000 pods" in shared
    # Results stored before the scenario shared a cluster have no count of contenders.
    assert _scale_title(args, _sharing({"a": {}, "b": {}})) == (
        "long-running MPIJobs x 4 workers, 1,000, then 1,000 more and a restart, then 3,000 more; "
        "queue limits raised"
    )
