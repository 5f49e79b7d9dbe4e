"""Template edits of a job with `mpioperator.io/roll-workers-on-template-change` against a real API server,
with the operator running: once the launcher runs, an edit restarts the whole job as a new attempt made
from the new templates (with `mpioperator.io/restart-policy`) or is refused with a condition (without);
before it starts, a launcher edit makes the launcher Job again. The test plays kubelet and, through
`LauncherJobController`, the Job controller."""

from __future__ import annotations

from typing import Any

from mpioperator.api.extensions import conveniences, restarts
from mpioperator.api.objects import Obj
from mpioperator.testing.mpijobs import mpijob
from test.integration.controller.actors import Actors, LauncherJobController, submitted
from test.integration.controller.conftest import Harness

JOB = "edited"
IMAGE = "mpioperator/mpi-pi:openmpi"


def _rolling(*, restart: bool, **kwargs: Any) -> Obj:
    body = mpijob(JOB, workers=2, **kwargs)
    annotations = {conveniences.ROLL_WORKERS: "true"}
    if restart:
        annotations |= {
            restarts.RESTART_POLICY: "OnWorkerFailure",
            restarts.MAX_RESTARTS: "2",
            restarts.RESTART_BACKOFF: "1",
        }
    body["metadata"]["annotations"] = annotations
    return body


def _attempt(obj: Obj | None) -> str | None:
    labels: dict[str, str] = ((obj or {}).get("metadata") or {}).get("labels") or {}
    return labels.get(restarts.ATTEMPT_LABEL)


def _image(pod: Obj) -> str:
    return str(pod["spec"]["containers"][0]["image"])


def _launcher_args(a: Actors) -> list[str]:
    launcher = a.launcher_job(JOB) or {"spec": {"template": {"spec": {"containers": [{}]}}}}
    return list(launcher["spec"]["template"]["spec"]["containers"][0].get("args") or [])


def _edit_worker_image(a: Actors, image: str) -> None:
    container = {"name": "worker", "image": image}
    a.patch_spec(
        JOB, {"spec": {"mpiReplicaSpecs": {"Worker": {"template": {"spec": {"containers": [container]}}}}}}
    )


def _edit_launcher_args(a: Actors, args: list[str]) -> None:
    container = {"name": "launcher", "image": IMAGE, "command": ["mpirun"], "args": args}
    a.patch_spec(
        JOB, {"spec": {"mpiReplicaSpecs": {"Launcher": {"template": {"spec": {"containers": [container]}}}}}}
    )


async def _running(a: Actors, attempt: str | None) -> list[Obj]:
    """Waits for the attempt's two workers and launcher Job, and runs the workers; the workers."""
    await a.until_true(
        lambda: len(a.worker_pods(JOB)) == 2 and all(_attempt(p) == attempt for p in a.worker_pods(JOB)),
        f"attempt {attempt}'s two workers",
    )
    await a.until_true(lambda: _attempt(a.launcher_job(JOB)) == attempt, f"attempt {attempt}'s launcher Job")
    a.set_workers(JOB, "Running", ready=True)
    await a.until_true(lambda: (a.condition(JOB, "Running") or {}).get("status") == "True", "the job Running")
    return a.worker_pods(JOB)


async def _launcher_started(a: Actors, job_controller: LauncherJobController) -> tuple[list[Obj], Obj]:
    """Runs the first attempt's workers and waits for the launcher's pod; the workers and the launcher Job."""
    workers = await _running(a, None)
    await a.until_true(lambda: bool(job_controller.active_pods()), "the launcher pod")
    launcher = a.launcher_job(JOB)
    assert launcher is not None
    return workers, launcher


async def _launcher_job_made_again(a: Actors, old: Obj) -> None:
    await a.until_true(
        lambda: (a.launcher_job(JOB) or old)["metadata"]["uid"] != old["metadata"]["uid"],
        "the launcher Job made again",
    )


async def test_editing_a_running_jobs_worker_image_then_launcher_args_restarts_it_on_each(
    harness: Harness,
) -> None:
    a = Actors(harness.cluster, harness.namespace)
    async with submitted(a, _rolling(restart=True)) as job_controller:
        first = await _running(a, "0")
        await a.until_true(lambda: bool(job_controller.active_pods()), "attempt 0's launcher pod")

        _edit_worker_image(a, "fixed:v2")

        await a.until_true(lambda: a.status(JOB).get("restarts") == 1, "a restart for the worker edit")
        second = await _running(a, "1")
        assert [_image(p) for p in second] == ["fixed:v2"] * 2
        assert not {p["metadata"]["uid"] for p in first} & {p["metadata"]["uid"] for p in second}
        await a.until_true(lambda: bool(job_controller.active_pods()), "attempt 1's launcher pod")

        _edit_launcher_args(a, ["-n", "2", "/home/mpiuser/pi", "--digits", "30"])

        await a.until_true(lambda: a.status(JOB).get("restarts") == 2, "a restart for the launcher edit")
        third = await _running(a, "2")
        assert _launcher_args(a) == ["-n", "2", "/home/mpiuser/pi", "--digits", "30"]
        assert [_image(p) for p in third] == ["fixed:v2"] * 2
    await harness.controller.recorder.flush()
    messages = [e["message"] for e in a.events(JOB) if e["reason"] == "MPIJobRestarting"]
    prefix = f"MPIJob {a.ns}/{JOB} restarts as a whole"
    assert messages == [
        f"{prefix} (restart 1 of at most 2): the worker template changed",
        f"{prefix} (restart 2 of at most 2): the launcher template changed",
    ]
    assert a.condition(JOB, "TemplateChangeRefused") is None


async def test_editing_a_running_job_that_does_not_restart_is_refused_and_its_pods_run_on(
    harness: Harness,
) -> None:
    a = Actors(harness.cluster, harness.namespace)
    async with submitted(a, _rolling(restart=False)) as job_controller:
        workers, launcher = await _launcher_started(a, job_controller)

        _edit_worker_image(a, "fixed:v2")

        refused = await a.until(
            lambda: a.condition(JOB, "TemplateChangeRefused"), "the TemplateChangeRefused condition"
        )
        assert refused is not None and refused["status"] == "True"
        assert refused["reason"] == "LauncherAlreadyStarted"
        assert refused["message"].startswith(
            f"MPIJob {a.ns}/{JOB}: the worker template changed after the launcher started"
        )
        assert [p["metadata"]["uid"] for p in a.worker_pods(JOB)] == [p["metadata"]["uid"] for p in workers]
        assert [_image(p) for p in a.worker_pods(JOB)] == [IMAGE] * 2
        assert (a.launcher_job(JOB) or {})["metadata"]["uid"] == launcher["metadata"]["uid"]
        assert (a.condition(JOB, "Running") or {}).get("status") == "True"

        # Putting the template back is no longer an edit: the condition goes.
        _edit_worker_image(a, IMAGE)
        await a.until_true(lambda: a.condition(JOB, "TemplateChangeRefused") is None, "the condition gone")
    await harness.controller.recorder.flush()
    assert a.event_reasons(JOB).count("TemplateChangeRefused") == 1
    assert "restarts" not in a.status(JOB)


async def test_editing_the_launcher_before_it_starts_makes_its_job_again_from_the_new_template(
    harness: Harness,
) -> None:
    a = Actors(harness.cluster, harness.namespace)
    async with submitted(
        a, _rolling(restart=False), phase="Pending"
    ) as job_controller:  # e.g. its image still pulling
        await a.until_true(lambda: a.launcher_job(JOB) is not None, "the launcher Job")
        await a.until_true(lambda: bool(job_controller.active_pods()), "its pending pod")
        old = a.launcher_job(JOB)
        assert old is not None

        _edit_launcher_args(a, ["-n", "2", "/home/mpiuser/pi", "--digits", "30"])

        await _launcher_job_made_again(a, old)
        assert _launcher_args(a) == ["-n", "2", "/home/mpiuser/pi", "--digits", "30"]
    await harness.controller.recorder.flush()
    assert a.event_reasons(JOB).count("LauncherRecreated") == 1
    assert a.condition(JOB, "TemplateChangeRefused") is None


async def test_a_refused_launcher_edit_reaches_the_launcher_after_a_suspend_and_resume(
    harness: Harness,
) -> None:
    a = Actors(harness.cluster, harness.namespace)
    async with submitted(a, _rolling(restart=False)) as job_controller:
        _, old = await _launcher_started(a, job_controller)
        _edit_launcher_args(a, ["-n", "2", "/home/mpiuser/pi", "--digits", "30"])
        await a.until_true(
            lambda: (
                (a.condition(JOB, "TemplateChangeRefused") or {})
                .get("message", "")
                .startswith(f"MPIJob {a.ns}/{JOB}: the launcher template changed after the launcher started")
            ),
            "the refusal",
        )

        a.patch_spec(JOB, {"spec": {"runPolicy": {"suspend": True}}})
        await a.until_true(
            lambda: not a.worker_pods(JOB) and not job_controller.active_pods(), "no pod left running"
        )
        a.patch_spec(JOB, {"spec": {"runPolicy": {"suspend": False}}})

        await _launcher_job_made_again(a, old)
        assert _launcher_args(a) == ["-n", "2", "/home/mpiuser/pi", "--digits", "30"]
        await _running(a, None)
        await a.until_true(lambda: a.condition(JOB, "TemplateChangeRefused") is None, "the refusal gone")
    await harness.controller.recorder.flush()
    assert a.event_reasons(JOB).count("LauncherRecreated") == 1
