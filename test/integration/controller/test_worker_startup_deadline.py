"""Workers that are not all Ready within the start-up deadline fail the job (issue 17, part 4; ksonnet's
`initTimeout`). Off unless asked for: the annotation `mpioperator.io/worker-startup-deadline-seconds`, or
the operator flag `--worker-startup-deadline-seconds` for every job."""

from __future__ import annotations

import datetime as dt
import math
import time
from typing import Any

from mpioperator.controller.conditions import parse_time
from mpioperator.testing.cluster import LocalCluster
from mpioperator.testing.mpijobs import mpijob
from test.integration.controller.actors import Actors
from test.integration.controller.conftest import Harness, running_controller
from test.integration.controller.waits import condition_appears

Obj = dict[str, Any]
ANNOTATION = "mpioperator.io/worker-startup-deadline-seconds"


def _with_deadline(name: str, seconds: str | None, **kwargs: Any) -> Obj:
    body = mpijob(name, **kwargs)
    if seconds is not None:
        body["metadata"]["annotations"] = {ANNOTATION: seconds}
    return body


def _started(a: Actors, job: str) -> dt.datetime:
    started = parse_time(a.status(job).get("startTime"))
    assert started is not None
    return started


def _deadline_ahead(a: Actors, job: str, margin: int) -> int:
    """A deadline, in seconds from the job's start, `margin` seconds or more from now.

    Set once the test has put the pods as it wants them, it cannot run out before: no start-up race the
    test has to win, however slow the machine."""
    elapsed = (dt.datetime.now(dt.UTC) - _started(a, job)).total_seconds()
    return math.ceil(elapsed) + margin


def _set_deadline(a: Actors, job: str, seconds: int) -> None:
    a.patch_spec(job, {"metadata": {"annotations": {ANNOTATION: str(seconds)}}})


async def _past_the_deadline(a: Actors, job: str, seconds: int) -> None:
    deadline = _started(a, job) + dt.timedelta(seconds=seconds + 1)
    await a.until_true(lambda: dt.datetime.now(dt.UTC) > deadline, "the deadline to have passed")


async def test_workers_not_ready_within_the_deadline_fail_the_job_listing_them_and_are_cleaned_up(
    harness: Harness,
) -> None:
    a = Actors(harness.cluster, harness.namespace)
    await a.submitted_with_workers(mpijob("late", workers=3, run_policy={"cleanPodPolicy": "Running"}))
    a.set_pod("late-worker-0", "Running", ready=True)
    a.set_pod("late-worker-2", "Running", ready=False)
    await a.until_true(
        lambda: (
            a.status("late").get("podCounts", {}).get("Worker") == {"running": 2, "ready": 1, "pending": 1}
        ),
        "the operator to see one worker Ready, one Running, one Pending",
    )
    _set_deadline(a, "late", _deadline_ahead(a, "late", margin=3))

    # No event comes after this: the controller has to keep time itself.
    failed = await condition_appears(a, "late", "Failed", "the deadline to fail the job", 60)
    assert failed["status"] == "True" and failed["reason"] == "WorkerStartupDeadlineExceeded", failed
    assert "late-worker-1" in failed["message"] and "late-worker-2" in failed["message"], failed
    assert "late-worker-0" not in failed["message"], failed
    assert a.status("late").get("completionTime")
    assert a.status("late").get("phase") == "Failed"
    await a.until_true(lambda: a.worker_pods("late") == [], "workers cleaned up per cleanPodPolicy Running")
    await harness.controller.recorder.flush()
    assert [e["type"] for e in a.events("late") if e["reason"] == "WorkerStartupDeadlineExceeded"] == [
        "Warning"
    ]


async def _after_the_deadline(a: Actors, since: float, seconds: float) -> None:
    await a.until_true(lambda: time.monotonic() > since + seconds + 1, "the deadline to have passed")


async def test_workers_ready_within_the_deadline_keep_the_job_running(harness: Harness) -> None:
    a = Actors(harness.cluster, harness.namespace)
    a.submit(mpijob("quick", workers=2))
    await a.launched("quick")
    await a.until_true(lambda: (a.condition("quick", "Running") or {}).get("status") == "True", "Running")
    # The workers were Ready before this deadline, which is set only now: the test has no race to win.
    seconds = _deadline_ahead(a, "quick", margin=1)
    _set_deadline(a, "quick", seconds)

    await _past_the_deadline(a, "quick", seconds)
    await harness.synced_again("quick")
    assert a.condition("quick", "Failed") is None


async def test_the_operator_flag_sets_a_deadline_for_every_job_and_the_annotation_zero_turns_it_off(
    mpijob_crd: LocalCluster, make_namespace: Any
) -> None:
    namespace = make_namespace(mpijob_crd)
    async with running_controller(
        mpijob_crd, namespace, settings={"worker_startup_deadline_seconds": 2}
    ) as harness:
        a = Actors(harness.cluster, harness.namespace)
        since = time.monotonic()
        a.submit(_with_deadline("flagged", None, workers=1))
        a.submit(_with_deadline("exempt", "0", workers=1))

        failed = await condition_appears(a, "flagged", "Failed", "the flag's deadline", 15)
        assert failed["reason"] == "WorkerStartupDeadlineExceeded"
        assert "flagged-worker-0" in failed["message"]
        await _after_the_deadline(a, since, 2)
        await harness.synced_again("exempt")
        assert a.condition("exempt", "Failed") is None


async def test_a_suspended_job_starts_its_deadline_again_when_resumed(harness: Harness) -> None:
    a = Actors(harness.cluster, harness.namespace)
    a.submit(_with_deadline("paused", "2", workers=1, run_policy={"suspend": True}))
    await condition_appears(a, "paused", "Suspended", "the job suspended")
    since = time.monotonic()
    await _after_the_deadline(a, since, 2)
    await harness.synced_again("paused")
    assert a.condition("paused", "Failed") is None

    a.patch_spec("paused", {"spec": {"runPolicy": {"suspend": False}}})
    failed = await condition_appears(a, "paused", "Failed", "the deadline after the resume", 15)
    assert failed["reason"] == "WorkerStartupDeadlineExceeded"
