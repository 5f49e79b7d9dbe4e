"""Stuck pods, bad worker endings and a launcher's last words, from pod status alone."""

from __future__ import annotations

import datetime as dt

import pytest

from mpioperator.api.objects import Obj
from mpioperator.controller.pod_state import PodStates
from mpioperator.controller.problems import (
    CRASH_LOOP_WINDOW,
    calm,
    describe,
    last_words,
    pod_problem,
    stuck_pods,
    worker_endings,
)
from test.unit.controller.pods import NOW, job_pod, restarted, terminated, unschedulable, waiting

SCHEDULER = "0/2 nodes are available: 2 Insufficient cpu."


def test_a_pod_the_scheduler_cannot_place_is_unschedulable_with_its_message() -> None:
    problem, _ = pod_problem(job_pod("w0", "Pending", conditions=unschedulable(SCHEDULER)), NOW)
    assert problem is not None
    assert (problem.pod, problem.reason, problem.message, problem.replica_type) == (
        "w0",
        "Unschedulable",
        SCHEDULER,
        "Worker",
    )


@pytest.mark.parametrize(
    "reason",
    [
        "ErrImagePull",
        "ImagePullBackOff",
        "InvalidImageName",
        "CrashLoopBackOff",
        "CreateContainerConfigError",
    ],
)
def test_a_container_waiting_for_a_known_problem_gives_the_kubelets_reason(reason: str) -> None:
    problem, _ = pod_problem(job_pod("w0", "Pending", containers=[waiting(reason, "why")]), NOW)
    assert problem is not None and (problem.reason, problem.message) == (reason, "why")


def test_waiting_while_the_container_is_created_is_no_problem() -> None:
    pod = job_pod("w0", "Pending", containers=[waiting("ContainerCreating")])
    assert pod_problem(pod, NOW) == (None, None)


def test_a_finished_or_deleted_pod_is_never_stuck() -> None:
    crash = [waiting("CrashLoopBackOff")]
    assert pod_problem(job_pod("w0", "Failed", containers=crash), NOW)[0] is None
    deleted = job_pod("w0", "Running", containers=crash)
    deleted["metadata"]["deletionTimestamp"] = "2026-03-04T05:06:00Z"
    assert pod_problem(deleted, NOW)[0] is None


def test_the_most_specific_problem_of_a_pod_wins() -> None:
    pod = job_pod(
        "w0",
        "Pending",
        containers=[waiting("CrashLoopBackOff"), waiting("InvalidImageName", "bad name")],
        conditions=unschedulable(SCHEDULER),
    )
    problem, _ = pod_problem(pod, NOW)
    assert problem is not None and problem.reason == "InvalidImageName"


def test_a_container_running_again_shortly_after_a_crash_still_counts_as_crash_looping() -> None:
    problem, recheck = pod_problem(job_pod("w0", containers=[restarted("Error", 1, seconds_ago=10)]), NOW)
    assert problem is not None and problem.reason == "CrashLoopBackOff"
    assert problem.message == "restarted after exit code 1" and problem.restarts == 1
    assert recheck == pytest.approx(CRASH_LOOP_WINDOW - 10)


def test_a_container_running_long_after_its_last_crash_is_well() -> None:
    pod = job_pod("w0", containers=[restarted("Error", 1, seconds_ago=CRASH_LOOP_WINDOW + 1)])
    assert pod_problem(pod, NOW) == (None, None)


def test_a_restarted_container_that_ended_badly_again_stays_crash_looping_until_the_kubelet_restarts_it() -> (
    None
):
    # Between a crash and the kubelet's restart the container is terminated, neither waiting nor running:
    # without this the condition would clear and come back with every restart of a crash loop.
    again = terminated("Error", 1)
    again["restartCount"] = 1
    problem, recheck = pod_problem(job_pod("j-launcher-x", containers=[again], role="launcher"), NOW)
    assert problem is not None and problem.reason == "CrashLoopBackOff"
    assert problem.message == "ended again with exit code 1" and recheck is None


def test_a_container_that_ended_badly_once_and_was_never_restarted_is_not_stuck() -> None:
    assert pod_problem(job_pod("w0", containers=[terminated("Error", 1)]), NOW) == (None, None)


def test_stuck_pods_come_launcher_first_then_workers_by_index() -> None:
    crash = [waiting("CrashLoopBackOff")]
    workers = [
        job_pod("j-worker-10", containers=crash, index=10),
        job_pod("j-worker-2", containers=crash, index=2),
        job_pod("j-worker-3", index=3),
    ]
    problems, recheck = stuck_pods([job_pod("j-launcher-x", containers=crash, role="launcher")], workers, NOW)
    assert [p.pod for p in problems] == ["j-launcher-x", "j-worker-2", "j-worker-10"]
    assert recheck is None


def test_describe_says_per_reason_who_and_the_first_message() -> None:
    launcher = job_pod(
        "j-launcher-x", "Pending", role="launcher", containers=[waiting("ErrImagePull", "not found")]
    )
    workers = [
        job_pod(f"j-worker-{i}", "Pending", index=i, conditions=unschedulable(SCHEDULER)) for i in range(5)
    ]
    problems, _ = stuck_pods([launcher], workers, NOW)
    assert describe(problems) == (
        "ErrImagePull: launcher j-launcher-x: not found; "
        f"Unschedulable: workers j-worker-0, j-worker-1, j-worker-2 and 2 more: {SCHEDULER}"
    )


def test_worker_endings_name_the_oom_killed_and_the_non_zero_exits_only() -> None:
    workers = [
        job_pod("j-worker-0", index=0, containers=[restarted("Error", 3, seconds_ago=500)]),
        job_pod("j-worker-1", "Failed", index=1, containers=[terminated("OOMKilled", 137)]),
        job_pod("j-worker-2", "Succeeded", index=2, containers=[terminated("Completed", 0)]),
    ]
    assert worker_endings(workers) == (
        "worker j-worker-0 ended with exit code 3, worker j-worker-1 was OOMKilled (exit code 137)"
    )


def test_worker_endings_are_bounded() -> None:
    workers = [
        job_pod(f"j-worker-{i}", "Failed", index=i, containers=[terminated("Error", 1)]) for i in range(5)
    ]
    assert worker_endings(workers).endswith(
        "worker j-worker-2 ended with exit code 1 and 2 more workers ended badly"
    )


def test_last_words_are_the_newest_launcher_pods_exit_code_and_the_tail_of_its_message() -> None:
    older = job_pod(
        "l-a",
        "Failed",
        role="launcher",
        created="2026-03-04T05:00:00Z",
        containers=[terminated("Error", 1, "a")],
    )
    newer = job_pod(
        "l-b",
        "Failed",
        role="launcher",
        created="2026-03-04T05:01:00Z",
        containers=[terminated("Error", 2, "x" * 1000 + "\nValueError: boom\n")],
    )
    words = last_words([older, newer])
    assert words.startswith("launcher l-b ended with exit code 2: ...")
    assert words.endswith("ValueError: boom") and len(words.encode()) < 500


def test_last_words_of_a_launcher_restarted_in_place_come_from_its_last_state() -> None:
    pod = job_pod("l-a", role="launcher", containers=[restarted("Error", 2, seconds_ago=1, message="bye")])
    assert last_words([pod]) == "launcher l-a ended with exit code 2: bye"


def test_last_words_drop_terminal_colors_nuls_and_other_control_characters_but_keep_lines() -> None:
    said = "\x1b[31mERROR\x1b[0m: rank 1\r\nprterun has exited\n\ufffd\x00\x07"
    pod = job_pod("l-a", role="launcher", containers=[restarted("Error", 14, seconds_ago=1, message=said)])
    assert (
        last_words([pod]) == "launcher l-a ended with exit code 14: ERROR: rank 1\nprterun has exited\n\ufffd"
    )


def test_a_message_of_control_characters_only_is_no_message() -> None:
    pod = job_pod(
        "l-a", role="launcher", containers=[restarted("Error", 2, seconds_ago=1, message="\x00\x1b[0m")]
    )
    assert last_words([pod]) == "launcher l-a ended with exit code 2"


def test_a_launcher_that_never_failed_has_no_last_words() -> None:
    assert last_words([job_pod("l-a", role="launcher", containers=[waiting("ContainerCreating")])]) == ""


def test_a_launcher_pod_being_deleted_speaks_of_its_end_before_the_deletion() -> None:
    """The Job controller deletes a launcher restarted in place at its back-off limit; what the container
    did when it was stopped (mpirun crashing with 139 on SIGTERM) is not why the job failed."""
    pod = job_pod(
        "l-a",
        role="launcher",
        containers=[
            {
                "name": "c",
                "state": {"terminated": {"reason": "Error", "exitCode": 139, "message": "segfault"}},
                "lastState": {"terminated": {"reason": "Error", "exitCode": 3, "message": "rank 0 exited 3"}},
                "restartCount": 1,
            }
        ],
    )
    assert last_words([pod]) == "launcher l-a ended with exit code 139: segfault"
    pod["metadata"]["deletionTimestamp"] = "2026-03-04T05:06:00Z"
    assert last_words([pod]) == "launcher l-a ended with exit code 3: rank 0 exited 3"


# Pods of every kind the tests above use: placed or not, waiting, crash-looping, restarted long ago or
# just now, ended well or badly, being deleted.
_VARIED = [
    job_pod("j-worker-0", index=0),
    job_pod("j-worker-1", "Pending", index=1, conditions=unschedulable(SCHEDULER)),
    job_pod("j-worker-2", "Pending", index=2, containers=[waiting("ContainerCreating")]),
    job_pod("j-worker-3", index=3, containers=[waiting("ErrImagePull", "not found")]),
    job_pod("j-worker-4", index=4, containers=[restarted("Error", 3, seconds_ago=10)]),
    job_pod("j-worker-5", index=5, containers=[restarted("OOMKilled", 137, seconds_ago=500)]),
    job_pod("j-worker-6", "Failed", index=6, containers=[terminated("Error", 1)]),
    job_pod("j-worker-7", "Succeeded", index=7, containers=[terminated("Completed", 0)]),
    job_pod("j-worker-8", index=8, containers=[{"name": "c", "state": {"running": {}}, "restartCount": 0}]),
]


@pytest.mark.parametrize("pod", _VARIED, ids=lambda p: p["metadata"]["name"])
@pytest.mark.parametrize("later", [0.0, 30.0, CRASH_LOOP_WINDOW + 1, 3600.0])
def test_a_calm_pod_has_no_problem_at_any_time(pod: Obj, later: float) -> None:
    if calm(pod):
        assert pod_problem(pod, NOW + dt.timedelta(seconds=later)) == (None, None)


def test_pods_that_can_be_stuck_are_not_calm() -> None:
    assert [p["metadata"]["name"] for p in _VARIED if not calm(p)] == [
        "j-worker-1",
        "j-worker-3",
        "j-worker-4",
        "j-worker-5",
    ]


def test_the_walks_answer_the_same_with_kept_pod_facts_and_without() -> None:
    launcher = job_pod("j-launcher-x", role="launcher", containers=[waiting("CrashLoopBackOff")])
    first = PodStates()
    for now in (NOW, NOW + dt.timedelta(seconds=CRASH_LOOP_WINDOW + 1)):
        kept = PodStates(first)  # a later sync, starting from the first one's answers
        assert stuck_pods([launcher], _VARIED, now, first) == stuck_pods([launcher], _VARIED, now)
        assert stuck_pods([launcher], _VARIED, now, kept) == stuck_pods([launcher], _VARIED, now)
        assert worker_endings(_VARIED, kept) == worker_endings(_VARIED)
