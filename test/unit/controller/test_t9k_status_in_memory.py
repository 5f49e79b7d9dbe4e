"""The sync's T9k status in memory: Resuming after a resume, Unknown for a pod the API server cannot tell,
and aggregate and tasks written in the same status write as the rest."""

from __future__ import annotations

from mpioperator.api.objects import Obj
from test.unit.controller.sync_fixtures import (
    EARLIER,
    NOW,
    Scene,
    job,
    running_scene,
    running_status,
    shared_children,
    true_condition,
    worker,
)


def _resumed() -> Obj:
    """A job resumed a moment ago: the Running condition still says what the suspension made it say."""
    return {
        "conditions": [
            true_condition("Created", "MPIJobCreated", "MPIJob default/pi is created.", EARLIER),
            {**true_condition("Suspended", "MPIJobResumed", "MPIJob resumed", NOW), "status": "False"},
            {
                **true_condition("Running", "MPIJobSuspended", "MPIJob default/pi is suspended.", EARLIER),
                "status": "False",
            },
        ],
        "startTime": NOW,
    }


async def test_a_resumed_job_making_its_pods_again_is_resuming_with_them_pending() -> None:
    pi = job(workers=2, status=_resumed())
    scene = Scene(pi, *shared_children(pi))

    await scene.sync()

    assert scene.writer.calls[-1] == ("update_status", "mpijobs", "pi")
    status = scene.written_status()
    assert status["phase"] == "Resuming"
    # The workers were just made (Pending); the launcher Job has no pod yet.
    assert status["aggregate"] == {
        "creating": 1,
        "pending": 2,
        "running": 0,
        "succeeded": 0,
        "failed": 0,
        "unknown": 0,
        "deleted": 0,
    }
    assert [p["name"] for p in status["tasks"][1]["pods"]] == ["pi-worker-0", "pi-worker-1"]


async def test_a_worker_whose_state_is_unknown_makes_the_running_job_unknown_in_one_write() -> None:
    pi = job(workers=2, status=running_status(2))
    scene = running_scene(pi, worker(pi, 0), worker(pi, 1, "Unknown"))

    await scene.sync()

    assert scene.writer.calls == [("update_status", "mpijobs", "pi")]
    status = scene.written_status()
    assert status["phase"] == "Unknown"
    assert (status["aggregate"]["running"], status["aggregate"]["unknown"]) == (2, 1)
    assert status["tasks"][1]["pods"][1]["phase"] == "Unknown"
