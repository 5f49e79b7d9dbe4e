"""Whole-job restarts back off (docs/extensions.md, "Whole-job restarts"): each restart says in status when
the next attempt may start, nothing of it is made before then (by this leader or a new one), the wait
doubles with each quick restart up to a cap, and `max-restarts` above the operator's cap is refused."""

from __future__ import annotations

import datetime as dt

from mpioperator.api.extensions import restarts
from mpioperator.api.objects import Obj
from mpioperator.controller.sync import SyncSettings
from test.unit.controller.sync_fixtures import (
    EARLIER,
    NOW,
    Scene,
    failed_worker,
    running_job,
    running_scene,
    running_status,
    shared_children,
    true_condition,
    worker,
)

START = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)  # NOW, the scenes' clock at its start


def _at(seconds: float) -> str:
    return (START + dt.timedelta(seconds=seconds)).strftime("%Y-%m-%dT%H:%M:%SZ")


def _opted_in(annotations: dict[str, str] | None = None, **status: object) -> Obj:
    return running_job(2, {restarts.RESTART_POLICY: "OnWorkerFailure", **(annotations or {})}, **status)


def _failing_scene(pi: Obj) -> Scene:
    return running_scene(pi, worker(pi, 0), failed_worker(pi, 1), labelled=True)


def _restarted(restarts_done: int, next_attempt: str, delay: int) -> Obj:
    """A job whose earlier attempt is all gone, as the API server has it after a restart."""
    restarting = true_condition("Restarting", "MPIJobRestarting", "restarting", NOW)
    return _opted_in(
        restarts=restarts_done,
        conditions=[running_status(2)["conditions"][0], restarting],
        nextAttemptTime=next_attempt,
        restartDelaySeconds=delay,
        startTime=next_attempt,
    )


async def test_the_first_restart_puts_the_next_attempts_earliest_time_ten_seconds_ahead_in_status() -> None:
    scene = _failing_scene(_opted_in())

    await scene.sync()

    status = scene.written_status()
    assert status["restarts"] == 1
    assert status["restartDelaySeconds"] == 10
    assert status["nextAttemptTime"] == _at(10)
    # The new attempt starts then: the worker start-up deadline counts from there.
    assert status["startTime"] == _at(10)


async def test_nothing_of_the_new_attempt_is_made_before_its_time_and_the_sync_comes_back_then() -> None:
    # A fresh syncer reading the status from the API server: what a new leader does.
    scene = Scene(_restarted(1, _at(10), 10), *shared_children(_opted_in()))

    result = await scene.sync()

    assert scene.writer.calls == []
    assert result.requeue_after == 10.0

    await scene.clock.advance(9.5)
    result = await scene.sync()
    assert scene.writer.calls == []
    assert result.requeue_after == 0.5

    await scene.clock.advance(0.5)
    await scene.sync()
    made = [c for c in scene.writer.calls if c[0] == "create"]
    assert made == [
        ("create", "pods", "pi-worker-0"),
        ("create", "pods", "pi-worker-1"),
        ("create", "jobs", "pi-launcher"),
    ]


async def test_the_wait_doubles_with_each_quick_restart_up_to_five_minutes() -> None:
    delays = []
    previous = 0
    for done in range(8):
        status: dict[str, object] = {"restarts": done}
        if previous:
            status |= {"restartDelaySeconds": previous, "startTime": NOW}
        scene = _failing_scene(_opted_in({restarts.MAX_RESTARTS: "20"}, **status))
        await scene.sync()
        previous = scene.written_status()["restartDelaySeconds"]
        delays.append(previous)

    assert delays == [10, 20, 40, 80, 160, 300, 300, 300]


async def test_an_attempt_that_ran_ten_minutes_before_failing_restarts_after_the_base_wait_again() -> None:
    # The attempt started an hour ago (EARLIER) after a 5-minute wait: it was not a quick failure.
    scene = _failing_scene(
        _opted_in({restarts.MAX_RESTARTS: "20"}, restarts=6, restartDelaySeconds=300, startTime=EARLIER)
    )

    await scene.sync()

    assert scene.written_status()["restartDelaySeconds"] == 10


async def test_the_annotation_sets_the_first_wait_and_the_cap_still_holds() -> None:
    scene = _failing_scene(_opted_in({restarts.RESTART_BACKOFF: "200"}, restarts=1))
    await scene.sync()
    assert scene.written_status()["restartDelaySeconds"] == 200

    scene = _failing_scene(
        _opted_in({restarts.RESTART_BACKOFF: "200"}, restarts=2, restartDelaySeconds=200, startTime=NOW)
    )
    await scene.sync()
    assert scene.written_status()["restartDelaySeconds"] == 300


async def test_a_suspended_job_is_not_held_by_the_back_off() -> None:
    pi = _restarted(1, _at(300), 300)
    pi["spec"]["runPolicy"]["suspend"] = True
    scene = Scene(pi, *shared_children(_opted_in()))

    result = await scene.sync()

    # The suspension is carried out (the status says Suspended) instead of waiting for the attempt.
    suspended = next(c for c in scene.written_status()["conditions"] if c["type"] == "Suspended")
    assert suspended["status"] == "True"
    assert result.requeue_after != 300.0


async def test_max_restarts_above_the_operators_cap_is_invalid_with_one_event() -> None:
    pi = _opted_in({restarts.MAX_RESTARTS: "101"})
    scene = Scene(pi)

    await scene.sync()

    invalid = next(c for c in scene.written_status()["conditions"] if c["type"] == "Invalid")
    assert invalid["status"] == "True"
    assert "mpioperator.io/max-restarts" in invalid["message"]
    assert "at most 100 (the operator's --max-restarts-cap)" in invalid["message"]
    assert [e[1] for e in scene.recorder.events] == ["ValidationError"]
    assert scene.writer.calls == [("update_status", "mpijobs", "pi")]

    # The next sync (the cache now has the condition) neither says it again nor writes.
    pi["status"] = scene.written_status()
    again = Scene(pi)
    await again.sync()
    assert again.recorder.events == [] and again.writer.calls == []


async def test_an_administrator_may_raise_or_lower_the_cap() -> None:
    raised = Scene(_opted_in({restarts.MAX_RESTARTS: "500"}), settings=SyncSettings(max_restarts_cap=1000))
    await raised.sync()
    assert not any(e[1] == "ValidationError" for e in raised.recorder.events)

    lowered = Scene(_opted_in({restarts.MAX_RESTARTS: "3"}), settings=SyncSettings(max_restarts_cap=2))
    await lowered.sync()
    assert [e[1] for e in lowered.recorder.events] == ["ValidationError"]


async def test_a_bad_back_off_annotation_is_a_validation_error() -> None:
    for value in ("0", "301", "ten"):
        scene = Scene(_opted_in({restarts.RESTART_BACKOFF: value}))
        await scene.sync()
        invalid = next(c for c in scene.written_status()["conditions"] if c["type"] == "Invalid")
        assert "mpioperator.io/restart-backoff-seconds" in invalid["message"], value
