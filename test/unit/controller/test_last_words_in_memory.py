"""The failed rank named and the last words kept (features/last_words.py), decided in memory: the sync that
sees the launcher fail names rank, pod, node and ending in the Failed condition and its one event, and
keeps the bounded last lines of the rank's worker and of the launcher in status.lastWords, which the
cleanup of the next sync leaves in place."""

from __future__ import annotations

from mpioperator.api.objects import Obj
from mpioperator.controller.features.last_words import MAX_LINE_BYTES, MAX_LINES
from test.unit.controller.sync_fixtures import (
    MemoryLogs,
    Scene,
    job,
    launcher,
    launcher_pod,
    running_status,
    shared_children,
    worker,
)
from test.unit.controller.test_failed_rank import OPEN_MPI_4_EXIT, OPEN_MPI_5_VICTIM_ABORTS

WORKER_LOG = "".join(f"sshd line {i}\n" for i in range(50)) + "x" * 5000 + "\n"


def failed_launcher_pod(pi: Obj, the_launcher: Obj, message: str, code: int = 7) -> Obj:
    pod = launcher_pod(pi, the_launcher, "Failed")
    terminated = {"exitCode": code, "reason": "Error", "message": message}
    pod["status"]["containerStatuses"] = [{"name": "launcher", "state": {"terminated": terminated}}]
    return pod


def failed_scene(message: str = OPEN_MPI_4_EXIT, code: int = 7, **run_policy: object) -> Scene:
    pi = job(workers=2, status=running_status(2), **run_policy)
    pi["spec"]["slotsPerWorker"] = 2
    pods = [worker(pi, 0), worker(pi, 1)]
    the_launcher = launcher(pi, "Failed", failed=1)
    the_launcher["status"]["conditions"][0].update(reason="BackoffLimitExceeded", message="backoff limit")
    scene = Scene(
        pi,
        *shared_children(pi, pods),
        *pods,
        the_launcher,
        failed_launcher_pod(pi, the_launcher, message, code),
        logs=MemoryLogs({"pi-worker-1": WORKER_LOG}),
    )
    served = worker(pi, 1)
    served["spec"]["nodeName"] = "node-b"
    scene.writer.served[("pods", "pi-worker-1")] = served
    return scene


async def test_a_failed_rank_is_named_with_its_pod_node_and_exit_code_in_failed_and_its_one_event() -> None:
    scene = failed_scene()

    await scene.sync()

    failed = next(c for c in scene.written_status()["conditions"] if c["type"] == "Failed")
    named = "rank 3 on pod pi-worker-1 (node node-b) ended with exit code 7"
    # Right after upstream's message, before the launcher's own last words.
    assert failed["message"].startswith(f"backoff limit: ; {named}; launcher pi-launcher-x1 ended with"), (
        failed
    )
    warnings = [e for e in scene.recorder.events if e[0] == "Warning"]
    assert [(reason, named in message) for _, reason, message in warnings] == [
        ("BackoffLimitExceeded/", True)
    ]


async def test_the_last_lines_of_the_failed_ranks_worker_and_of_the_launcher_are_kept_bounded() -> None:
    scene = failed_scene()

    await scene.sync()

    kept = scene.written_status()["lastWords"]
    assert {k: kept[k] for k in ("rank", "exitCode", "pod", "node")} == {
        "rank": 3,
        "exitCode": 7,
        "pod": "pi-worker-1",
        "node": "node-b",
    }
    assert kept["worker"]["pod"] == "pi-worker-1"
    lines = kept["worker"]["lines"]
    assert len(lines) == MAX_LINES and lines[-1] == "x" * MAX_LINE_BYTES and lines[0] == "sshd line 31"
    assert kept["launcher"]["pod"] == "pi-launcher-x1"
    assert kept["launcher"]["lines"][-2:] == ["  Exit code:    7", "-" * 74]
    # The worker's log was read once, bounded at the server too.
    assert scene.logs.reads == [("pi-worker-1", MAX_LINES, MAX_LINES * (MAX_LINE_BYTES + 1))]


async def test_cleanup_of_the_failed_job_leaves_its_last_words_on_it() -> None:
    scene = failed_scene(cleanPodPolicy="Running")
    await scene.sync()
    written = scene.written_status()
    assert written["lastWords"]["worker"]["lines"], written
    pi = job(workers=2, status=written, cleanPodPolicy="Running")
    pi["spec"]["slotsPerWorker"] = 2
    pods = [worker(pi, 0), worker(pi, 1)]
    after = Scene(pi, *shared_children(pi, pods), *pods, launcher(pi, "Failed", failed=1))

    await after.sync()

    assert ("delete", "pods", "pi-worker-1") in after.writer.calls
    statuses = [c for c in after.writer.log if c.verb == "update_status"]
    assert all(c.body is not None and c.body["status"]["lastWords"] == written["lastWords"] for c in statuses)
    assert after.logs.reads == []  # nothing read again


async def test_a_launcher_failure_that_names_no_rank_keeps_the_launchers_lines_and_names_nobody() -> None:
    scene = failed_scene("mpirun: could not resolve a host\n")

    await scene.sync()

    status = scene.written_status()
    failed = next(c for c in status["conditions"] if c["type"] == "Failed")
    assert "rank" not in failed["message"], failed
    assert status["lastWords"] == {
        "launcher": {"pod": "pi-launcher-x1", "lines": ["mpirun: could not resolve a host"]}
    }
    assert scene.logs.reads == []


async def test_open_mpi_5s_report_of_a_victim_that_aborted_names_nobody_and_is_kept_without_its_nul() -> None:
    """What Open MPI 5 printed once on a loaded node when rank 3 exited 7: rank 1, still in a collective,
    saw rank 3's socket close and aborted first, and prterun reported that abort, ending with a NUL."""
    scene = failed_scene(OPEN_MPI_5_VICTIM_ABORTS + "\ufffd\x00\n", code=14)

    await scene.sync()

    status = scene.written_status()
    failed = next(c for c in status["conditions"] if c["type"] == "Failed")
    assert "rank 1 on" not in failed["message"] and "rank 3" not in failed["message"], failed
    assert "\x00" not in failed["message"] and failed["message"].endswith("\ufffd"), failed
    lines = status["lastWords"]["launcher"]["lines"]
    assert lines[-1] == "\ufffd" and "rank" not in status["lastWords"], status["lastWords"]
    assert scene.logs.reads == []
