"""`status.aggregate` and `status.tasks`: T9k's counts and per-replica pod lists, bounded."""

from __future__ import annotations

from mpioperator.controller.tasks import MAX_TASK_PODS, aggregate, tasks, unknown
from test.unit.controller.jobs import reference_job
from test.unit.controller.pods import job_pod, waiting


def _uid(pod: dict[str, object], uid: str) -> dict[str, object]:
    pod["metadata"]["uid"] = uid  # type: ignore[index]
    return pod


def test_each_pod_is_counted_once_and_missing_replicas_are_creating() -> None:
    job = reference_job(workers=4)
    going = job_pod("pi-worker-2", "Running")
    going["metadata"]["deletionTimestamp"] = "2026-03-04T05:06:00Z"
    workers = [job_pod("pi-worker-0", "Running"), job_pod("pi-worker-1", "Failed"), going]
    assert aggregate(job, [], workers, wants_pods=True) == {
        "creating": 3,  # worker 2 (its pod is going), worker 3 and the launcher
        "pending": 0,
        "running": 1,
        "succeeded": 0,
        "failed": 1,
        "unknown": 0,
        "deleted": 1,
    }


def test_a_launcher_pod_that_failed_leaves_the_launcher_creating_until_the_job_makes_another() -> None:
    job = reference_job(workers=1)
    launcher = [job_pod("pi-launcher-a", "Failed", role="launcher")]
    counts = aggregate(job, launcher, [job_pod("pi-worker-0", "Unknown")], wants_pods=True)
    assert (counts["creating"], counts["failed"], counts["unknown"]) == (1, 1, 1)
    counts = aggregate(
        job, [*launcher, job_pod("pi-launcher-b", "Pending", role="launcher")], [], wants_pods=True
    )
    assert (counts["creating"], counts["pending"]) == (1, 1)  # the worker only


def test_a_job_that_wants_no_pods_has_none_creating() -> None:
    assert aggregate(reference_job(workers=3), [], [], wants_pods=False)["creating"] == 0


def test_tasks_list_each_pod_with_uid_phase_and_restarts_per_replica_type() -> None:
    older = _uid(job_pod("pi-launcher-a", "Failed", role="launcher", created="2026-03-04T05:00:00Z"), "l1")
    newer = _uid(job_pod("pi-launcher-b", "Running", role="launcher", created="2026-03-04T05:01:00Z"), "l2")
    crashing = _uid(
        job_pod("pi-worker-1", "Running", containers=[waiting("CrashLoopBackOff", restarts=4)]), "w1"
    )
    first = _uid(job_pod("pi-worker-0", "Pending"), "w0")
    assert tasks([older, newer], [crashing, first]) == [
        {
            "type": "Launcher",
            "restartCount": 0,
            "pods": [
                {"name": "pi-launcher-b", "uid": "l2", "phase": "Running", "restartCount": 0},
                {"name": "pi-launcher-a", "uid": "l1", "phase": "Failed", "restartCount": 0},
            ],
        },
        {
            "type": "Worker",
            "restartCount": 4,
            "pods": [
                {"name": "pi-worker-0", "uid": "w0", "phase": "Pending", "restartCount": 0},
                {"name": "pi-worker-1", "uid": "w1", "phase": "Running", "restartCount": 4},
            ],
        },
    ]


def test_tasks_list_the_first_pods_by_index_and_say_how_many_more_there_are() -> None:
    workers = [job_pod(f"big-worker-{i}", "Running") for i in range(1000, -1, -1)]
    worker_task = tasks([], workers)[1]
    assert [p["name"] for p in worker_task["pods"]] == [f"big-worker-{i}" for i in range(MAX_TASK_PODS)]
    assert worker_task["truncated"] == 1001 - MAX_TASK_PODS


def test_a_pod_in_phase_unknown_makes_the_state_unknown_unless_it_is_going() -> None:
    lost = job_pod("pi-launcher-a", "Unknown", role="launcher")
    assert unknown([lost], [job_pod("pi-worker-0", "Running")])
    lost["metadata"]["deletionTimestamp"] = "2026-03-04T05:06:00Z"
    assert not unknown([lost], [job_pod("pi-worker-0", "Running")])
