"""One sync describes each pod it reads once (controller/pod_state.py): the launcher's start, the worker
start-up deadline, the pod counts, the aggregate and the tasks all take the same description."""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest

from mpioperator.api import annotation_keys as keys
from mpioperator.api.objects import Obj
from mpioperator.controller import pod_state
from test.unit.controller import sync_fixtures as fx


@pytest.fixture
def described(monkeypatch: pytest.MonkeyPatch) -> Counter[str]:
    """How often each pod (by name) is described."""
    counted: Counter[str] = Counter()
    original = pod_state.describe

    def describe(pod: Obj) -> Any:
        counted[pod["metadata"]["name"]] += 1
        return original(pod)

    monkeypatch.setattr(pod_state, "describe", describe)
    return counted


async def test_a_sync_describes_each_of_the_jobs_pods_once(described: Counter[str]) -> None:
    # Waiting for Ready workers and a start-up deadline: the launcher's start and the deadline read the
    # workers' readiness too, besides the counts, aggregate and tasks.
    pi = fx.job(3, status=fx.running_status(3))
    pi["spec"]["launcherCreationPolicy"] = "WaitForWorkersReady"
    pi["metadata"]["annotations"] = {keys.WORKER_STARTUP_DEADLINE: "600"}
    pods = [fx.worker(pi, 0), fx.worker(pi, 1), fx.worker(pi, 2, phase="Pending", ready=False)]
    scene = fx.running_scene(pi, *pods)
    await scene.sync()
    status = scene.written_status()
    assert status["podCounts"]["Worker"] == {"running": 2, "ready": 2, "pending": 1}, status["podCounts"]
    assert described == {"pi-worker-0": 1, "pi-worker-1": 1, "pi-worker-2": 1, "pi-launcher-x1": 1}
