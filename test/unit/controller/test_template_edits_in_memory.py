"""Template edits of a job with `mpioperator.io/roll-workers-on-template-change`, decided by one sync
against in-memory caches: before the launcher starts the launcher Job is made again; once it runs an edit
restarts the whole job when it opted in to restarts and has one left, and is refused with a condition
otherwise; a job without the annotation is left as upstream leaves it."""

from __future__ import annotations

import copy

from mpioperator.api.extensions import conveniences, restarts
from mpioperator.api.objects import Obj
from test.unit.controller.sync_fixtures import (
    NOW,
    Scene,
    job_children,
    launcher,
    running_job,
    running_status,
    shared_children,
    worker,
)

ROLL = {conveniences.ROLL_WORKERS: "true"}
RESTARTS = {restarts.RESTART_POLICY: "OnWorkerFailure"}


def _edited(pi: Obj, replica: str, image: str = "fixed:v2") -> Obj:
    """`pi` after the user changed the image of its `replica` template."""
    new = copy.deepcopy(pi)
    new["spec"]["mpiReplicaSpecs"][replica]["template"]["spec"]["containers"][0]["image"] = image
    return new


def _scene(made_from: Obj, now: Obj, launcher_phase: str = "Running") -> Scene:
    """The caches hold `now`, and the children made from `made_from` (the job before the edit)."""
    workers = [worker(made_from, 0), worker(made_from, 1)]
    the_launcher = launcher(made_from)
    children = job_children(
        made_from, *workers, the_launcher=the_launcher, launcher_phase=launcher_phase, labelled=True
    )
    return Scene(now, *children)


def _condition(status: Obj, cond_type: str) -> Obj | None:
    return next((c for c in status.get("conditions") or () if c["type"] == cond_type), None)


def _deletes(scene: Scene) -> list[tuple[str, str]]:
    return [(kind, name) for verb, kind, name in scene.writer.calls if verb == "delete"]


async def test_a_worker_edit_of_a_running_job_that_may_restart_restarts_it_as_a_new_attempt() -> None:
    before = running_job(2, {**ROLL, **RESTARTS})
    scene = _scene(before, _edited(before, "Worker"))

    await scene.sync()

    assert scene.writer.calls[0] == ("update_status", "mpijobs", "pi")
    assert sorted(_deletes(scene)) == [
        ("jobs", "pi-launcher"),
        ("pods", "pi-launcher-x1"),
        ("pods", "pi-worker-0"),
        ("pods", "pi-worker-1"),
    ]
    status = scene.written_status()
    assert status["restarts"] == 1
    restarting = _condition(status, "Restarting")
    assert restarting is not None and restarting["status"] == "True"
    message = "MPIJob default/pi restarts as a whole (restart 1 of at most 3): the worker template changed"
    assert restarting["message"] == message
    assert scene.recorder.events == [("Warning", "MPIJobRestarting", message)]


async def test_a_launcher_edit_of_a_running_job_that_may_restart_restarts_it_too() -> None:
    before = running_job(2, {**ROLL, **RESTARTS})
    scene = _scene(before, _edited(_edited(before, "Launcher"), "Worker"))

    await scene.sync()

    restarting = _condition(scene.written_status(), "Restarting") or {}
    assert restarting.get("message", "").endswith(": the worker and launcher templates changed")
    assert ("jobs", "pi-launcher") in _deletes(scene)

    scene = _scene(before, _edited(before, "Launcher"))
    await scene.sync()
    restarting = _condition(scene.written_status(), "Restarting") or {}
    assert restarting.get("message", "").endswith(": the launcher template changed")


async def test_the_next_attempt_is_made_from_the_edited_templates() -> None:
    before = running_job(2, {**ROLL, **RESTARTS})
    after = _edited(_edited(before, "Launcher", "launcher:v2"), "Worker")
    restarted = copy.deepcopy(after)
    restarted["status"] = {**running_status(2), "restarts": 1}
    restarted["status"]["conditions"] = restarted["status"]["conditions"][:1]
    scene = Scene(restarted, *shared_children(restarted))

    await scene.sync()

    for i in (0, 1):
        pod = scene.writer.body("create", "pods", f"pi-worker-{i}")
        assert pod["spec"]["containers"][0]["image"] == "fixed:v2"
        assert pod["metadata"]["labels"][restarts.ATTEMPT_LABEL] == "1"
    made = scene.writer.body("create", "jobs", "pi-launcher")
    assert made["spec"]["template"]["spec"]["containers"][0]["image"] == "launcher:v2"
    assert made["metadata"]["labels"][restarts.ATTEMPT_LABEL] == "1"


async def test_an_edit_of_a_running_job_without_restarts_is_refused_with_a_condition_and_one_event() -> None:
    before = running_job(2, ROLL)
    scene = _scene(before, _edited(before, "Worker"))

    await scene.sync()

    assert _deletes(scene) == []
    assert not any(verb == "create" for verb, _, _ in scene.writer.calls)
    status = scene.written_status()
    refused = _condition(status, "TemplateChangeRefused")
    assert refused is not None and refused["status"] == "True"
    assert refused["reason"] == "LauncherAlreadyStarted"
    assert refused["message"].startswith(
        "MPIJob default/pi: the worker template changed after the launcher started; the running pods "
        "keep the template they were made from"
    )
    assert "Set mpioperator.io/restart-policy" in refused["message"]
    assert scene.recorder.events == [("Warning", "TemplateChangeRefused", refused["message"])]
    assert "restarts" not in status

    # The next sync reads the condition it wrote: no second event, nothing written.
    again = _scene(before, {**_edited(before, "Worker"), "status": status})
    await again.sync()
    assert again.recorder.events == []
    assert again.writer.calls == []


async def test_an_edit_after_the_last_restart_is_refused_and_says_the_limit() -> None:
    before = running_job(2, {**ROLL, **RESTARTS, restarts.MAX_RESTARTS: "1"}, restarts=1)
    scene = _scene(before, _edited(before, "Launcher"))

    await scene.sync()

    assert _deletes(scene) == []
    refused = _condition(scene.written_status(), "TemplateChangeRefused")
    assert refused is not None and refused["reason"] == "RestartLimitReached"
    assert "the launcher template changed after the launcher started" in refused["message"]
    assert "the job restarted 1 times, the most mpioperator.io/max-restarts allows" in refused["message"]
    assert scene.written_status()["restarts"] == 1


async def test_the_refusal_goes_once_the_template_is_back_to_what_the_pods_were_made_from() -> None:
    before = running_job(2, ROLL)
    scene = _scene(before, _edited(before, "Worker"))
    await scene.sync()
    status = scene.written_status()
    assert _condition(status, "TemplateChangeRefused") is not None

    reverted = _scene(before, {**copy.deepcopy(before), "status": status})
    await reverted.sync()

    assert _condition(reverted.written_status(), "TemplateChangeRefused") is None
    assert reverted.recorder.events == []


async def test_a_launcher_edit_before_the_launcher_starts_makes_the_launcher_job_again() -> None:
    before = running_job(2, ROLL)
    scene = _scene(before, _edited(before, "Launcher"), launcher_phase="Pending")

    await scene.sync()

    assert scene.writer.calls == [("delete", "jobs", "pi-launcher")]  # made again by the next sync
    assert scene.recorder.events == [
        ("Normal", "LauncherRecreated", "Launcher template changed: re-creating launcher Job pi-launcher")
    ]


async def test_the_launcher_job_made_again_carries_the_new_template_and_its_digest() -> None:
    before = running_job(2, ROLL)
    after = _edited(before, "Launcher", "launcher:v2")
    workers = [worker(before, 0), worker(before, 1)]
    scene = Scene(after, *shared_children(before, workers), *workers)

    await scene.sync()

    made = scene.writer.body("create", "jobs", "pi-launcher")
    assert made["spec"]["template"]["spec"]["containers"][0]["image"] == "launcher:v2"
    stamp = made["metadata"]["labels"]["mpioperator.io/launcher-template-hash"]
    ours = launcher(after)
    assert stamp == ours["metadata"]["labels"]["mpioperator.io/launcher-template-hash"]
    assert stamp != launcher(before)["metadata"]["labels"]["mpioperator.io/launcher-template-hash"]


async def test_without_the_annotation_an_edit_is_left_as_upstream_leaves_it() -> None:
    before = running_job(2, RESTARTS)
    scene = _scene(before, _edited(_edited(before, "Launcher"), "Worker"))

    await scene.sync()

    assert scene.writer.calls == []  # nothing deleted, and no condition to write
    assert scene.recorder.events == []
    assert "mpioperator.io/launcher-template-hash" not in launcher(before)["metadata"]["labels"]


async def test_pods_made_before_the_job_opted_in_are_not_taken_for_an_edit_once_it_runs() -> None:
    upstreams = running_job(2, RESTARTS)
    opted_in = running_job(2, {**ROLL, **RESTARTS})
    scene = _scene(upstreams, opted_in)

    await scene.sync()

    assert scene.writer.calls == []  # no restart counted, no condition
    assert scene.recorder.events == []


async def test_on_resume_a_launcher_job_of_another_template_is_made_again_not_resumed() -> None:
    before = running_job(2, ROLL)
    before["status"] = {"conditions": running_status(2)["conditions"][:1], "startTime": NOW}
    suspended_launcher = launcher(before, suspended=True)  # its pods went with the suspension
    scene = Scene(_edited(before, "Launcher", "launcher:v2"), *shared_children(before), suspended_launcher)

    await scene.sync()

    assert [c for c in scene.writer.calls if c[1] == "jobs"] == [("delete", "jobs", "pi-launcher")]
    assert [(v, n) for v, k, n in scene.writer.calls if k == "pods"] == [
        ("create", "pi-worker-0"),
        ("create", "pi-worker-1"),
    ]
    assert (
        "Normal",
        "LauncherRecreated",
        "Launcher template changed: re-creating launcher Job pi-launcher",
    ) in (scene.recorder.events)


async def test_the_refusal_goes_when_the_job_finishes() -> None:
    before = running_job(2, ROLL)
    scene = _scene(before, _edited(before, "Worker"))
    await scene.sync()
    status = scene.written_status()
    assert _condition(status, "TemplateChangeRefused") is not None

    workers = [worker(before, 0), worker(before, 1)]
    done = launcher(before, "Complete", succeeded=1)
    finished = Scene(
        {**_edited(before, "Worker"), "status": status}, *shared_children(before), *workers, done
    )
    await finished.sync()

    status = finished.written_status()
    assert (_condition(status, "Succeeded") or {}).get("status") == "True"
    assert _condition(status, "TemplateChangeRefused") is None


async def test_on_resume_a_launcher_job_that_failed_before_the_suspension_is_made_again_too() -> None:
    before = running_job(2, ROLL)
    before["status"] = {"conditions": running_status(2)["conditions"][:1], "startTime": NOW}
    suspended_launcher = launcher(before, suspended=True, failed=1)
    scene = Scene(_edited(before, "Launcher", "launcher:v2"), *shared_children(before), suspended_launcher)

    await scene.sync()

    assert [c for c in scene.writer.calls if c[1] == "jobs"] == [("delete", "jobs", "pi-launcher")]
