"""Progress and stalled jobs (mpioperator.io/progress, mpioperator.io/stall-timeout-seconds) decided by
syncs against in-memory caches and an in-memory launcher log: what is read, how often, and what the
status and events say."""

from __future__ import annotations

from mpioperator.api.extensions import launcher_log, restarts
from mpioperator.api.objects import Obj
from mpioperator.controller.log_follower import FollowSettings
from mpioperator.controller.sync import SyncSettings
from test.unit.controller.log_fixtures import MemoryLogs, sync_keeping_status
from test.unit.controller.sync_fixtures import (
    Scene,
    labelled_launcher_pod,
    launcher,
    launcher_pod,
    running_job,
    shared_children,
    worker,
)

INTERVAL = 10.0
SETTINGS = SyncSettings(launcher_log=FollowSettings(interval=INTERVAL, qps=10, burst=20))


def _opted_in(**annotations: str) -> Obj:
    return running_job(2, annotations)


def _scene(pi: Obj) -> tuple[Scene, MemoryLogs]:
    the_launcher = launcher(pi)
    restartable = restarts.RESTART_POLICY in pi["metadata"]["annotations"]
    pod = (labelled_launcher_pod if restartable else launcher_pod)(pi, the_launcher)
    workers = [worker(pi, 0), worker(pi, 1)]
    logs = MemoryLogs()
    scene = Scene(
        pi, *shared_children(pi, workers), *workers, the_launcher, pod, settings=SETTINGS, logs=logs
    )
    logs.clock = scene.clock  # lines are stamped at the syncs' time
    return scene, logs


def _condition(status: Obj, cond_type: str) -> Obj | None:
    return next((c for c in status.get("conditions") or () if c["type"] == cond_type), None)


async def test_json_progress_lines_of_the_running_launcher_become_status_progress() -> None:
    scene, logs = _scene(_opted_in(**{launcher_log.PROGRESS: "json"}))
    logs.write(
        "rank 0 of 2 on pi-worker-0",
        '{"step": 30, "total": 120, "metrics": {"loss": 0.25, "lr": "1e-3"}}',
        "not progress {",
    )

    await sync_keeping_status(scene)

    progress = scene.job["status"]["progress"]
    assert progress == {
        "done": 30,
        "total": 120,
        "percent": 25,
        "text": "30/120 (25%)",
        "metrics": {"loss": "0.25", "lr": "1e-3"},
        "lastUpdateTime": "2026-01-01T00:00:00Z",
    }
    call = logs.calls[0]
    assert call["name"] == "pi-launcher-x1" and call["timestamps"] is True
    assert call["limit_bytes"] is not None and call["tail_lines"] is not None


async def test_a_line_pattern_gives_done_total_and_its_other_named_groups_as_metrics() -> None:
    pattern = r"epoch (?P<done>\d+)/(?P<total>\d+) loss (?P<loss>[0-9.]+)"
    scene, logs = _scene(_opted_in(**{launcher_log.PROGRESS: pattern}))
    logs.write("epoch 1/4 loss 0.9", "epoch 2/4 loss 0.5", "some other line")

    await sync_keeping_status(scene)

    progress = scene.job["status"]["progress"]
    assert (progress["done"], progress["total"], progress["percent"]) == (2, 4, 50)
    assert progress["metrics"] == {"loss": "0.5"}


async def test_progress_moves_only_at_the_jobs_next_read_which_the_sync_comes_back_for() -> None:
    scene, logs = _scene(_opted_in(**{launcher_log.PROGRESS: "json"}))
    logs.write('{"step": 1, "total": 10}')
    first = await sync_keeping_status(scene)
    assert first is not None and first <= INTERVAL

    await scene.clock.advance(2)
    logs.write('{"step": 2, "total": 10}')
    await sync_keeping_status(scene)  # an event's sync before the job's turn: no read
    assert len(logs.calls) == 1
    assert scene.job["status"]["progress"]["done"] == 1

    await scene.clock.advance(INTERVAL)
    await sync_keeping_status(scene)
    assert len(logs.calls) == 2
    assert logs.calls[1]["since_time"] == "2026-01-01T00:00:00Z"  # from the last line already seen
    assert scene.job["status"]["progress"]["done"] == 2
    assert scene.job["status"]["progress"]["lastUpdateTime"] == "2026-01-01T00:00:12Z"


async def test_a_job_that_asks_for_neither_has_no_log_read_and_no_revisit() -> None:
    scene, logs = _scene(_opted_in())
    logs.write('{"step": 1, "total": 10}')

    requeue = await sync_keeping_status(scene)

    assert logs.calls == []
    assert "progress" not in scene.job["status"]
    assert requeue is None


async def test_no_new_output_for_the_stall_timeout_gives_stalled_and_one_warning_event() -> None:
    scene, logs = _scene(_opted_in(**{launcher_log.STALL_TIMEOUT: "30"}))
    logs.write("rank 0 starts the allreduce")
    await sync_keeping_status(scene)
    for _ in range(2):  # 10 s and 20 s of silence: not yet
        await scene.clock.advance(INTERVAL)
        await sync_keeping_status(scene)
    assert _condition(scene.job["status"], "Stalled") is None

    for _ in range(3):  # 30 s and more: Stalled, said once
        await scene.clock.advance(INTERVAL)
        await sync_keeping_status(scene)

    stalled = _condition(scene.job["status"], "Stalled")
    assert stalled is not None and stalled["status"] == "True" and stalled["reason"] == "MPIJobStalled"
    assert stalled["message"] == "MPIJob default/pi shows no new launcher output for 30s"
    warnings = [e for e in scene.recorder.events if e[1] == "MPIJobStalled"]
    assert warnings == [("Warning", "MPIJobStalled", stalled["message"])]
    assert _condition(scene.job["status"], "Failed") is None  # stall-action not set: only the condition

    logs.write("allreduce done")
    await scene.clock.advance(INTERVAL)
    await sync_keeping_status(scene)
    resumed = _condition(scene.job["status"], "Stalled")
    assert resumed is not None and resumed["status"] == "False" and resumed["reason"] == "MPIJobOutputResumed"


async def test_with_progress_on_output_that_brings_no_new_progress_still_stalls() -> None:
    scene, logs = _scene(_opted_in(**{launcher_log.PROGRESS: "json", launcher_log.STALL_TIMEOUT: "20"}))
    logs.write('{"step": 5}')
    await sync_keeping_status(scene)
    for n in range(3):
        await scene.clock.advance(INTERVAL)
        logs.write(f"NCCL WARN still waiting {n}")
        await sync_keeping_status(scene)

    stalled = _condition(scene.job["status"], "Stalled")
    assert stalled is not None and stalled["status"] == "True"
    assert stalled["message"] == "MPIJob default/pi shows no new progress for 20s"


async def test_a_failed_log_read_is_taken_neither_for_output_nor_for_silence() -> None:
    scene, logs = _scene(_opted_in(**{launcher_log.STALL_TIMEOUT: "20"}))
    logs.write("started")
    await sync_keeping_status(scene)
    logs.failing = True
    for _ in range(5):
        await scene.clock.advance(INTERVAL)
        await sync_keeping_status(scene)

    assert len(logs.calls) == 6
    assert _condition(scene.job["status"], "Stalled") is None


async def test_stall_action_fail_fails_a_job_without_a_restart_policy_and_stops_its_launcher() -> None:
    pi = _opted_in(**{launcher_log.STALL_TIMEOUT: "20", launcher_log.STALL_ACTION: "fail"})
    scene, logs = _scene(pi)
    logs.write("rank 1 sleeps before the allreduce")
    await sync_keeping_status(scene)
    for _ in range(2):
        await scene.clock.advance(INTERVAL)
        await sync_keeping_status(scene)

    status = scene.job["status"]
    failed = _condition(status, "Failed")
    assert failed is not None and failed["status"] == "True" and failed["reason"] == "MPIJobStalled"
    assert "no new launcher output for 20s; it is failed" in failed["message"]
    assert status["phase"] == "Failed" and status["completionTime"]
    running = _condition(status, "Running")
    assert running is not None and running["status"] == "False"
    assert [e[1] for e in scene.recorder.events if e[0] == "Warning"] == ["MPIJobStalled"]

    before = len(scene.writer.log)
    await sync_keeping_status(scene)  # the finished job's sync: its launcher Job is suspended
    assert ("update", "jobs", "pi-launcher") in scene.writer.calls[before:]
    suspended = [c.body for c in scene.writer.log[before:] if (c.verb, c.resource) == ("update", "jobs")]
    assert suspended and suspended[0] is not None and suspended[0]["spec"]["suspend"] is True


async def test_a_stalled_job_with_a_restart_policy_restarts_as_a_whole_and_its_new_attempt_is_not_stalled() -> (
    None
):
    pi = _opted_in(
        **{
            launcher_log.STALL_TIMEOUT: "20",
            launcher_log.STALL_ACTION: "fail",
            restarts.RESTART_POLICY: "OnFailure",
        }
    )
    scene, logs = _scene(pi)
    logs.write("rank 1 sleeps before the allreduce")
    await sync_keeping_status(scene)
    for _ in range(2):
        await scene.clock.advance(INTERVAL)
        await sync_keeping_status(scene)
    stalled = _condition(scene.job["status"], "Stalled")
    assert stalled is not None and stalled["status"] == "True"
    assert "it restarts as a whole" in stalled["message"]
    assert _condition(scene.job["status"], "Failed") is None

    await sync_keeping_status(scene)  # the restarts feature reads the condition

    status = scene.job["status"]
    assert status["restarts"] == 1
    restarting = _condition(status, "Restarting")
    assert restarting is not None and restarting["status"] == "True"
    assert "it stalled: MPIJob default/pi shows no new launcher output for 20s" in restarting["message"]
    after = _condition(status, "Stalled")
    assert after is not None and after["status"] == "False" and after["reason"] == "MPIJobRestarted"
    assert ("delete", "jobs", "pi-launcher") in scene.writer.calls
    assert [e[1] for e in scene.recorder.events if e[0] == "Warning"] == ["MPIJobStalled", "MPIJobRestarting"]


async def test_untrusted_log_bytes_never_crash_the_sync_and_give_no_progress() -> None:
    scene, logs = _scene(_opted_in(**{launcher_log.PROGRESS: "json"}))
    logs.write(
        '{"step": NaN}',
        '{"step": -3, "total": 10}',
        '{"step": true}',
        '{"step": "x"}',
        "{" * 10_000,
        "\udcff\x00 binary",
        '{"step": [1]}',
    )

    await sync_keeping_status(scene)

    assert "progress" not in scene.job["status"]
    assert len(logs.calls) == 1
