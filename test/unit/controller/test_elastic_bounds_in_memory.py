"""Elastic bounds (features/elastic_bounds.py), decided in memory: a worker count outside
mpioperator.io/min-workers..max-workers runs the nearest bound, with the condition WorkersOutOfBounds and
one Warning event; a job with bounds names its workers' selector for the scale subresource."""

from __future__ import annotations

from mpioperator.api.objects import Obj
from test.unit.controller.sync_fixtures import job, running_scene, running_status, worker

SELECTOR = "training.kubeflow.org/job-name=pi,training.kubeflow.org/job-role=worker"


def bounded_job(replicas: int, low: int | None, high: int | None, running: int) -> Obj:
    pi = job(workers=replicas, status=running_status(running))
    annotations = pi["metadata"].setdefault("annotations", {})
    if low is not None:
        annotations["mpioperator.io/min-workers"] = str(low)
    if high is not None:
        annotations["mpioperator.io/max-workers"] = str(high)
    return pi


def out_of_bounds(status: Obj) -> Obj | None:
    return next((c for c in status["conditions"] if c["type"] == "WorkersOutOfBounds"), None)


async def test_a_scale_above_the_maximum_runs_the_maximum_with_a_condition_and_one_warning() -> None:
    pi = bounded_job(4, 1, 3, running=3)
    scene = running_scene(pi, *(worker(pi, i) for i in range(3)))

    await scene.sync()

    assert not [c for c in scene.writer.calls if c[0] in ("create", "delete")], scene.writer.calls
    status = scene.written_status()
    message = (
        "spec.mpiReplicaSpecs[Worker].replicas 4 is above mpioperator.io/max-workers 3: "
        "the job runs 3 workers until it is scaled within its bounds"
    )
    condition = out_of_bounds(status)
    assert condition is not None
    assert (condition["status"], condition["reason"], condition["message"]) == (
        "True",
        "WorkerReplicasClamped",
        message,
    )
    assert scene.recorder.events == [("Warning", "WorkerReplicasClamped", message)]
    assert status["replicaStatuses"]["Worker"] == {"active": 3, "selector": SELECTOR}


async def test_a_scale_below_the_minimum_keeps_the_minimums_workers() -> None:
    pi = bounded_job(1, 2, None, running=2)
    scene = running_scene(pi, worker(pi, 0), worker(pi, 1))

    await scene.sync()

    assert ("delete", "pods", "pi-worker-1") not in scene.writer.calls
    condition = out_of_bounds(scene.written_status())
    assert condition is not None and "below mpioperator.io/min-workers 2" in condition["message"]


async def test_a_scale_within_the_bounds_is_upstreams_and_removes_the_condition_without_an_event() -> None:
    clamped = bounded_job(4, 1, 3, running=3)
    first = running_scene(clamped, *(worker(clamped, i) for i in range(3)))
    await first.sync()
    pi = bounded_job(2, 1, 3, running=3)
    pi["status"] = first.written_status()
    scene = running_scene(pi, *(worker(pi, i) for i in range(3)))

    await scene.sync()

    assert ("delete", "pods", "pi-worker-2") in scene.writer.calls
    assert out_of_bounds(scene.written_status()) is None
    assert scene.recorder.events == []


async def test_bounds_that_contradict_each_other_make_the_job_invalid() -> None:
    pi = bounded_job(2, 3, 2, running=2)
    scene = running_scene(pi, worker(pi, 0), worker(pi, 1))

    await scene.sync()

    invalid = next(c for c in scene.written_status()["conditions"] if c["type"] == "Invalid")
    assert "metadata.annotations[mpioperator.io/min-workers]" in invalid["message"], invalid
    assert "must not be more than mpioperator.io/max-workers (2)" in invalid["message"], invalid
