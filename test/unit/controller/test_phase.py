"""status.phase from the conditions, and pod counts per replica type."""

from __future__ import annotations

import pytest

from mpioperator.controller.phase import counts, phase, pod_counts
from test.unit.controller.pods import job_pod, ready, restarted, terminated, waiting


def _status(*true: str) -> dict[str, object]:
    return {"conditions": [{"type": t, "status": "True"} for t in true]}


@pytest.mark.parametrize(
    ("conditions", "suspended", "expected"),
    [
        ((), False, "Pending"),
        (("Created",), False, "Pending"),
        (("Created", "Running"), False, "Running"),
        (("Created", "Running"), True, "Suspended"),
        (("Created", "Succeeded"), False, "Succeeded"),
        (("Created", "Failed"), True, "Failed"),
    ],
)
def test_phase_follows_upstreams_conditions(
    conditions: tuple[str, ...], suspended: bool, expected: str
) -> None:
    assert phase(_status(*conditions), suspended) == expected


def _cond(cond_type: str, status: str, reason: str = "") -> dict[str, str]:
    return {"type": cond_type, "status": status, "reason": reason}


def _resumed_and(third: dict[str, str]) -> dict[str, list[dict[str, str]]]:
    """The status of a created job resumed from a suspension, with `third` as its third condition."""
    return {"conditions": [_cond("Created", "True"), _cond("Suspended", "False", "MPIJobResumed"), third]}


def test_a_resumed_job_is_resuming_until_it_runs_again() -> None:
    resumed = _resumed_and(_cond("Running", "False", "MPIJobSuspended"))
    assert phase(resumed, False) == "Resuming"
    resumed["conditions"][2] = _cond("Running", "True", "MPIJobRunning")
    assert phase(resumed, False) == "Running"


def test_a_resumed_job_restarted_as_a_whole_is_pending_again() -> None:
    restarting = _resumed_and(_cond("Restarting", "True", "MPIJobRestarting"))
    assert phase(restarting, False) == "Pending"


def test_a_pod_in_phase_unknown_makes_a_running_job_unknown_but_not_a_finished_one() -> None:
    assert phase(_status("Created", "Running"), False, pods_unknown=True) == "Unknown"
    assert phase(_status("Created", "Running"), True, pods_unknown=True) == "Suspended"
    assert phase(_status("Created", "Failed"), False, pods_unknown=True) == "Failed"


def test_a_false_condition_does_not_set_the_phase() -> None:
    status = {"conditions": [{"type": "Running", "status": "False"}, {"type": "Failed", "status": "False"}]}
    assert phase(status, False) == "Pending"


def test_counts_by_phase_readiness_and_restarts_leaving_zeros_out() -> None:
    pods = [
        job_pod("a", "Pending", containers=[waiting("ContainerCreating")]),
        job_pod(
            "b",
            "Running",
            conditions=ready(True),
            containers=[restarted("Error", 1, seconds_ago=1, restarts=2)],
        ),
        job_pod("c", "Running", conditions=ready(False)),
        job_pod("d", "Failed", containers=[terminated("OOMKilled", 137)]),
        job_pod("e", "Succeeded"),
    ]
    assert counts(pods) == {
        "pending": 1,
        "running": 2,
        "ready": 1,
        "succeeded": 1,
        "failed": 1,
        "restarts": 2,
    }


def test_a_pod_being_deleted_is_not_counted() -> None:
    going = job_pod("a", "Running", conditions=ready(True))
    going["metadata"]["deletionTimestamp"] = "2026-03-04T05:06:00Z"
    assert counts([going]) == {}


def test_pod_counts_count_launcher_and_workers_apart_and_always_name_both() -> None:
    launcher = job_pod("l", "Pending", role="launcher")
    assert pod_counts([launcher], []) == {"Launcher": {"pending": 1}, "Worker": {}}
    worker = job_pod("w", "Running", conditions=ready(True))
    assert pod_counts([], [worker]) == {"Launcher": {}, "Worker": {"running": 1, "ready": 1}}
