"""The sync's T9k status in memory: Resuming after a resume, Unknown for a pod the API server cannot tell,
and aggregate and tasks written in the same status write as the rest."""

from __future__ import annotations

from mpioperator.api.objects import Obj
from test.unit.controller.sync_fixtures import (
    EARLIER,
    NOW,
    Scene,
    job,
    launcher,
    running_job,
    running_scene,
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
    pi = running_job()
    scene = running_scene(pi, worker(pi, 0), worker(pi, 1, "Unknown"))

    await scene.sync()

    assert scene.writer.calls == [("update_status", "mpijobs", "pi")]
    status = scene.written_status()
    assert status["phase"] == "Unknown"
    assert (status["aggregate"]["running"], status["aggregate"]["unknown"]) == (2, 1)
    assert status["tasks"][1]["pods"][1]["phase"] == "Unknown"


def _resumed_with_launcher_settings() -> Obj:
    pi = job(workers=2, status=_resumed())
    pi["metadata"]["annotations"] = {"mpioperator.io/resume-launcher-command": "/resume.sh"}
    return pi


async def test_a_resume_with_launcher_settings_deletes_the_launcher_made_before_and_makes_none_yet() -> None:
    pi = _resumed_with_launcher_settings()
    before = job(workers=2, suspend=True)  # the launcher Job as it was made while suspended
    scene = Scene(pi, *shared_children(pi), launcher(before, suspended=True))

    await scene.sync()

    assert ("delete", "jobs", "pi-launcher") in scene.writer.calls
    assert not [c for c in scene.writer.calls if c[:2] == ("create", "jobs")]
    assert [e[1] for e in scene.recorder.events] == ["LauncherRenewedForResume"]


async def test_once_the_old_launcher_is_gone_the_resumed_job_makes_one_with_the_resumes_command() -> None:
    pi = _resumed_with_launcher_settings()
    scene = Scene(pi, *shared_children(pi))

    await scene.sync()

    made = scene.writer.body("create", "jobs", "pi-launcher")
    assert made["metadata"]["annotations"] == {"mpioperator.io/made-after-resume": "true"}
    assert made["spec"]["template"]["spec"]["containers"][0]["command"] == ["/resume.sh"]
    # Made after the resume, it is not made again.
    again = Scene(pi, *shared_children(pi), launcher(pi))
    await again.sync()
    assert not [c for c in again.writer.calls if c[1] == "jobs"]
