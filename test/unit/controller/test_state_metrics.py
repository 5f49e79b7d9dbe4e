"""mpi_operator_jobs and mpi_operator_job_pending_oldest_seconds, computed from cached MPIJobs."""

from __future__ import annotations

import datetime as dt
from typing import Any

import pytest
from prometheus_client import CollectorRegistry, generate_latest

from mpioperator.controller.state_metrics import JobStateCollector, job_state, state_families

NOW = dt.datetime(2026, 1, 1, 12, 0, 0, tzinfo=dt.UTC)


def job(namespace: str, *true: str, created: str = "2026-01-01T11:00:00Z", **status: Any) -> dict[str, Any]:
    conds = [{"type": t, "status": "True"} for t in true]
    return {
        "metadata": {"namespace": namespace, "name": "j", "creationTimestamp": created},
        "status": {"conditions": conds, **status},
    }


def samples(jobs: list[dict[str, Any]]) -> dict[tuple[str, tuple[str, ...]], float]:
    found = {}
    for family in state_families(jobs, NOW):
        for sample in family.samples:
            found[(sample.name, tuple(sample.labels.values()))] = sample.value
    return found


@pytest.mark.parametrize(
    ("true", "state"),
    [
        ((), "Pending"),
        (("Created",), "Pending"),
        (("Created", "Running"), "Running"),
        (("Created", "Restarting"), "Restarting"),
        (("Created", "Running", "Suspended"), "Suspended"),
        (("Created", "Running", "Succeeded"), "Succeeded"),
        (("Created", "Suspended", "Failed"), "Failed"),
    ],
)
def test_each_job_counts_in_one_state_finished_over_suspended_over_running(
    true: tuple[str, ...], state: str
) -> None:
    assert job_state(job("a", *true)) == state


def test_counts_per_namespace_list_every_state_including_zeros() -> None:
    found = samples([job("a", "Created"), job("a", "Running"), job("a", "Running"), job("b", "Succeeded")])
    assert found[("mpi_operator_jobs", ("a", "Pending"))] == 1
    assert found[("mpi_operator_jobs", ("a", "Running"))] == 2
    assert found[("mpi_operator_jobs", ("a", "Failed"))] == 0
    assert found[("mpi_operator_jobs", ("b", "Succeeded"))] == 1
    assert len([k for k in found if k[0] == "mpi_operator_jobs"]) == 12


def test_oldest_pending_counts_from_start_time_else_creation_and_only_pending_jobs() -> None:
    found = samples(
        [
            job("a", "Created", startTime="2026-01-01T11:50:00Z"),  # resumed 10 minutes ago
            job("a", "Created", created="2026-01-01T11:58:00Z"),
            job("b", "Created", "Running", created="2026-01-01T00:00:00Z"),
            job("c", "Created", "Suspended", created="2026-01-01T00:00:00Z"),
        ]
    )
    assert found[("mpi_operator_job_pending_oldest_seconds", ("a",))] == 600
    assert ("mpi_operator_job_pending_oldest_seconds", ("b",)) not in found
    assert ("mpi_operator_job_pending_oldest_seconds", ("c",)) not in found


def test_a_replica_without_synced_caches_exports_no_samples() -> None:
    cached: list[dict[str, Any]] | None = None
    registry = CollectorRegistry()
    registry.register(JobStateCollector(lambda: cached, lambda: NOW))
    assert b"mpi_operator_jobs{" not in generate_latest(registry)
    cached = [job("a", "Created", "Running")]
    exposed = generate_latest(registry).decode()
    assert 'mpi_operator_jobs{namespace="a",state="Running"} 1.0' in exposed
