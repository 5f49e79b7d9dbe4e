"""An MPIJob's phase, replica counts and progress line, read from its status as the CLI shows them."""

from __future__ import annotations

from typing import Any

import pytest

from mpioperator.client import MPIJobBuilder, finished, phase, progress, replica_counts
from mpioperator.client.status import ReplicaCounts, workers_column


def job_with(conditions: list[tuple[str, str]], **status: Any) -> dict[str, Any]:
    job = MPIJobBuilder("pi").image("x:1").workers(2).build()
    job["status"] = {
        "conditions": [
            {"type": t, "status": s, "lastTransitionTime": f"2026-01-01T00:00:0{i}Z", "message": f"{t} {s}"}
            for i, (t, s) in enumerate(conditions)
        ],
        **status,
    }
    return job


def test_no_status_is_pending() -> None:
    assert phase(MPIJobBuilder("pi").image("x:1").build()) == "Pending"


def test_a_written_phase_wins_over_the_conditions() -> None:
    assert phase(job_with([("Running", "True")], phase="Queued")) == "Queued"


@pytest.mark.parametrize(
    ("conditions", "expected"),
    [
        ([("Created", "True")], "Created"),
        ([("Created", "True"), ("Running", "True")], "Running"),
        ([("Created", "True"), ("Running", "False"), ("Suspended", "True")], "Suspended"),
        ([("Created", "True"), ("Running", "True"), ("Restarting", "True")], "Restarting"),
        ([("Created", "True"), ("Running", "False"), ("Succeeded", "True")], "Succeeded"),
        ([("Created", "True"), ("Running", "False"), ("Failed", "True")], "Failed"),
        ([("Created", "True"), ("Suspended", "True"), ("Failed", "True")], "Failed"),
        ([("Created", "False")], "Pending"),
    ],
)
def test_phase_is_the_strongest_true_condition(conditions: list[tuple[str, str]], expected: str) -> None:
    assert phase(job_with(conditions)) == expected


def test_only_succeeded_and_failed_are_finished() -> None:
    assert finished(job_with([("Succeeded", "True")]))
    assert finished(job_with([("Failed", "True")]))
    assert not finished(job_with([("Suspended", "True")]))


def test_replica_counts_pair_the_spec_with_the_status() -> None:
    job = job_with(
        [("Running", "True")],
        replicaStatuses={"Launcher": {"active": 1}, "Worker": {"active": 1, "failed": 1}},
    )
    assert replica_counts(job) == [ReplicaCounts("Launcher", 1, 1, 0, 0), ReplicaCounts("Worker", 2, 1, 0, 1)]
    assert workers_column(job) == "1/2"


def test_progress_line_names_phase_counts_and_the_latest_message() -> None:
    job = job_with(
        [("Created", "True"), ("Running", "True")],
        replicaStatuses={"Launcher": {"active": 1}, "Worker": {"active": 2}},
    )
    assert progress(job) == "Running; launcher 1/1 active; worker 2/2 active; Running True"


def test_progress_line_of_a_finished_job_counts_succeeded_pods() -> None:
    job = job_with(
        [("Created", "True"), ("Running", "False"), ("Succeeded", "True")],
        replicaStatuses={"Launcher": {"succeeded": 1}, "Worker": {}},
    )
    assert progress(job) == "Succeeded; launcher 0/1 active, 1 succeeded; worker 0/2 active; Succeeded True"


def test_wait_line_of_a_job_reporting_progress_shows_its_text_and_metrics() -> None:
    job = job_with(
        [("Created", "True"), ("Running", "True")],
        replicaStatuses={"Launcher": {"active": 1}, "Worker": {"active": 2}},
        progress={
            "done": 30,
            "total": 120,
            "percent": 25,
            "text": "30/120 (25%)",
            "metrics": {"loss": "0.25"},
        },
    )
    assert progress(job) == (
        "Running; launcher 1/1 active; worker 2/2 active; progress 30/120 (25%) (loss=0.25); Running True"
    )
