"""An unchanged running job's sync does no per-pod work in its children step nor in its report: the calls of the functions
that look at one pod are as many for 1,000 workers as for 100 (none), counted, not timed. A pod that
changes is still seen: the hostfile follows a worker that starts running."""

from __future__ import annotations

import copy
from collections import Counter
from collections.abc import Callable
from typing import Any

import pytest

from mpioperator.api import annotation_keys, names
from mpioperator.controller import (
    children,
    hostfile_memo,
    listers,
    pod_state,
    problems,
    report,
    status,
    tasks,
    worker_view,
)
from mpioperator.controller.features import worker_loss
from mpioperator.controller.sync import SyncSettings
from test.unit.controller import sync_fixtures as fx


def _indexed_scene(
    workers: int, phase: str = "Running", annotations: dict[str, str] | None = None
) -> tuple[fx.Scene, dict[str, fx.IndexedStore]]:
    job = fx.job(workers)
    if annotations:
        job["metadata"].setdefault("annotations", {}).update(annotations)
    pods = [fx.worker(job, i, phase=phase) for i in range(workers)]
    scene = fx.running_scene(job, *pods, settings=SyncSettings(max_worker_replicas=workers))
    return scene, fx.index_listers(scene)


async def _settled(scene: fx.Scene) -> None:
    await scene.sync()
    written = [c.body for c in scene.writer.log if c.verb == "update_status" and c.body is not None]
    if written:
        scene.job["status"] = copy.deepcopy(written[-1]["status"])
    await scene.sync()


_PER_POD: list[tuple[Any, str]] = [
    (listers, "matches"),
    (names, "worker_index"),
    (children, "is_controlled_by"),
    (hostfile_memo, "data_inputs"),
    (problems, "pod_problem"),  # per pod, looking for stuck ones
    (pod_state, "describe"),  # per pod, its phase, readiness and restarts for the counts and tasks
    (worker_loss, "disruption"),  # per pod, looking for workers lost with their node
    (status, "worker_tally"),  # one walk over the workers for upstream's replica statuses
    (report, "worker_tally"),
]


def _counting(monkeypatch: pytest.MonkeyPatch, functions: list[tuple[Any, str]]) -> Counter[str]:
    """Each of `functions` (module, name) wrapped to count its calls, by name."""
    calls: Counter[str] = Counter()

    def counted(name: str, func: Callable[..., Any]) -> Callable[..., Any]:
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            calls[name] += 1
            return func(*args, **kwargs)

        return wrapper

    for module, name in functions:
        monkeypatch.setattr(module, name, counted(name, getattr(module, name)))
    return calls


@pytest.fixture
def per_pod_calls(monkeypatch: pytest.MonkeyPatch) -> Counter[str]:
    return _counting(monkeypatch, _PER_POD)


async def _unchanged_sync_calls(workers: int, calls: Counter[str]) -> Counter[str]:
    scene, _ = _indexed_scene(workers)
    await _settled(scene)
    calls.clear()
    before = len(scene.writer.log)
    await scene.sync()
    assert len(scene.writer.log) == before, "an unchanged job's sync makes no request"
    return Counter(calls)


async def test_an_unchanged_running_jobs_children_step_looks_at_no_pod_whatever_its_workers(
    per_pod_calls: Counter[str],
) -> None:
    small = await _unchanged_sync_calls(100, per_pod_calls)
    big = await _unchanged_sync_calls(1000, per_pod_calls)
    assert big == small
    # No label matched, no worker name parsed, no hostfile input made; the ownership checks left are
    # those of the Service, ConfigMap and launcher.
    assert big["matches"] == big["worker_index"] == big["data_inputs"] == 0, big
    assert big["pod_problem"] == big["_phase"] == big["disruption"] == 0, big
    assert big["worker_tally"] == 0, big


async def test_a_worker_that_starts_running_after_a_memoized_sync_joins_the_hostfile() -> None:
    scene, stores = _indexed_scene(3, phase="Pending")
    await _settled(scene)
    pod = copy.deepcopy(stores["pods"].store.get(scene.job["metadata"]["namespace"], "pi-worker-1"))
    assert pod is not None
    pod["status"]["phase"] = "Running"
    pod["metadata"]["resourceVersion"] = "999"
    stores["pods"].store.update(pod)
    await scene.sync()
    updates = [
        c.body for c in scene.writer.log if c.verb == "update" and c.body and c.body["kind"] == "ConfigMap"
    ]
    assert updates, "the ConfigMap is rewritten"
    assert "pi-worker-1" in updates[-1]["data"]["hostfile"]


_PER_CHANGED_POD: list[tuple[Any, str]] = [
    (pod_state, "describe"),  # its phase, readiness and restarts
    (names, "worker_index"),  # the index its name says
    (worker_view, "is_controlled_by"),  # whether the job made it
    (problems, "calm"),  # whether it can be stuck
    (problems, "_last_bad_end"),  # how it ended
    (tasks, "_index"),  # its place among the tasks
    (worker_loss, "disruption"),  # whether it was lost with its node
]


@pytest.fixture
def per_changed_pod_calls(monkeypatch: pytest.MonkeyPatch) -> Counter[str]:
    return _counting(monkeypatch, _PER_CHANGED_POD)


def _restart_once_more(scene: fx.Scene, stores: dict[str, fx.IndexedStore], name: str, restarts: int) -> None:
    """The cache gets a new version of pod `name`, its container restarted `restarts` times."""
    pod = copy.deepcopy(stores["pods"].store.get(scene.job["metadata"]["namespace"], name))
    assert pod is not None
    pod["metadata"]["resourceVersion"] = "999"
    pod["status"]["containerStatuses"] = [
        {"name": "worker", "restartCount": restarts, "state": {"running": {}}}
    ]
    stores["pods"].store.update(pod)


async def _calls_after_one_pod_changed(
    workers: int, calls: Counter[str], annotations: dict[str, str] | None = None
) -> Counter[str]:
    scene, stores = _indexed_scene(workers, annotations=annotations)
    await _settled(scene)
    _restart_once_more(scene, stores, "pi-worker-1", 1)
    calls.clear()
    await scene.sync()
    return Counter(calls)


async def test_a_running_jobs_sync_after_one_pod_changed_looks_again_at_that_pod_only(
    per_changed_pod_calls: Counter[str],
) -> None:
    small = await _calls_after_one_pod_changed(100, per_changed_pod_calls)
    big = await _calls_after_one_pod_changed(1000, per_changed_pod_calls)
    assert big == small
    # The changed worker once each; how the launcher ended is asked of its pod as well, as at any sync.
    assert big["describe"] == big["worker_index"] == big["is_controlled_by"] == big["calm"] == 1, big
    assert big["disruption"] == 1, big


async def test_the_one_changed_pod_shows_in_the_status_of_a_sync_that_looked_only_at_it(
    per_changed_pod_calls: Counter[str],
) -> None:
    scene, stores = _indexed_scene(50)
    await _settled(scene)
    _restart_once_more(scene, stores, "pi-worker-7", 2)
    await scene.sync()
    # A change of the counts alone is written once it settled (report.CountsSettle).
    await scene.clock.advance(report.COUNTS_SETTLE)
    await scene.sync()
    written = [c.body for c in scene.writer.log if c.verb == "update_status" and c.body is not None]
    status = written[-1]["status"]
    assert status["podCounts"]["Worker"]["restarts"] == 2
    worker_task = next(t for t in status["tasks"] if t["type"] == "Worker")
    assert worker_task["restartCount"] == 2
    assert [p["restartCount"] for p in worker_task["pods"] if p["name"] == "pi-worker-7"] == [2]


async def test_a_running_job_with_a_startup_deadline_names_no_worker_per_index_when_a_pod_changed(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    calls = _counting(monkeypatch, [(names, "worker_name")])
    deadline = {annotation_keys.WORKER_STARTUP_DEADLINE: "600"}
    small = await _calls_after_one_pod_changed(100, calls, deadline)
    big = await _calls_after_one_pod_changed(1000, calls, deadline)
    # The job is Running: its workers were all Ready in time, and the deadline has nothing left to judge.
    assert big == small, (small, big)
