"""What `kubectl mpijob list` and `describe` print, from API objects and a fixed clock."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from mpioperator.cli import render
from mpioperator.client import MPIJobBuilder

NOW = datetime(2026, 1, 1, 12, 0, 0, tzinfo=UTC)


@pytest.mark.parametrize(
    ("timestamp", "expected"),
    [
        ("2026-01-01T11:59:18Z", "42s"),
        ("2026-01-01T11:55:30Z", "4m30s"),
        ("2026-01-01T11:30:00Z", "30m"),
        ("2026-01-01T07:00:00Z", "5h"),
        ("2025-12-29T12:00:00Z", "3d"),
        (None, "<none>"),
        ("not a time", "<none>"),
    ],
)
def test_ages_read_like_kubectls(timestamp: str | None, expected: str) -> None:
    assert render.age(timestamp, NOW) == expected


def job(name: str, namespace: str, created: str, **status: Any) -> dict[str, Any]:
    built = MPIJobBuilder(name, namespace=namespace).image("x:1").workers(2).build()
    built["metadata"]["creationTimestamp"] = created
    built["status"] = status
    return built


def test_list_table_has_name_phase_workers_and_age() -> None:
    jobs = [
        job("pi", "a", "2026-01-01T11:59:00Z"),
        job(
            "long-name",
            "b",
            "2026-01-01T10:00:00Z",
            conditions=[{"type": "Running", "status": "True"}],
            replicaStatuses={"Worker": {"active": 2}},
        ),
    ]
    assert render.jobs_table(jobs, NOW, with_namespace=False).splitlines() == [
        "NAME        PHASE     WORKERS   AGE",
        "pi          Pending   0/2       60s",
        "long-name   Running   2/2       120m",
    ]
    assert (
        render.jobs_table(jobs, NOW, with_namespace=True).splitlines()[0]
        == "NAMESPACE   NAME        PHASE     WORKERS   AGE"
    )


def pod(name: str, phase: str, **status: Any) -> dict[str, Any]:
    return {"metadata": {"name": name}, "status": {"phase": phase, **status}}


def test_a_running_pod_or_one_being_created_is_no_problem() -> None:
    assert (
        render.pod_problem(pod("w", "Running", containerStatuses=[{"name": "c", "state": {"running": {}}}]))
        is None
    )
    creating = [{"name": "c", "state": {"waiting": {"reason": "ContainerCreating"}}}]
    assert render.pod_problem(pod("w", "Pending", containerStatuses=creating)) is None


def test_problems_are_told_in_the_kubelets_and_schedulers_words() -> None:
    pull = [
        {
            "name": "c",
            "state": {"waiting": {"reason": "ImagePullBackOff", "message": 'Back-off pulling image "x"'}},
        }
    ]
    assert (
        render.pod_problem(pod("w", "Pending", containerStatuses=pull))
        == 'ImagePullBackOff: Back-off pulling image "x"'
    )
    unschedulable = [
        {
            "type": "PodScheduled",
            "status": "False",
            "reason": "Unschedulable",
            "message": "0/4 nodes are available",
        }
    ]
    assert (
        render.pod_problem(pod("w", "Pending", conditions=unschedulable))
        == "Unschedulable: 0/4 nodes are available"
    )
    failed = [{"name": "launcher", "state": {"terminated": {"exitCode": 137, "reason": "OOMKilled"}}}]
    assert (
        render.pod_problem(pod("l", "Failed", containerStatuses=failed))
        == "launcher exited with 137 (OOMKilled)"
    )
    assert render.pod_problem(pod("w", "Failed", reason="Evicted")) == "Evicted"
    restarted = [{"name": "c", "restartCount": 3, "state": {"running": {}}}]
    assert render.pod_problem(pod("w", "Running", containerStatuses=restarted)) == "c restarted 3 times"


def test_describe_shows_phase_conditions_replicas_problem_pods_and_events() -> None:
    described = job(
        "pi",
        "team-a",
        "2026-01-01T11:50:00Z",
        startTime="2026-01-01T11:50:05Z",
        conditions=[
            {
                "type": "Created",
                "status": "True",
                "reason": "MPIJobCreated",
                "lastTransitionTime": "2026-01-01T11:50:01Z",
                "message": "MPIJob team-a/pi is created.",
            },
            {
                "type": "Running",
                "status": "True",
                "reason": "MPIJobRunning",
                "lastTransitionTime": "2026-01-01T11:51:00Z",
                "message": "MPIJob team-a/pi is running.",
            },
        ],
        replicaStatuses={"Launcher": {"active": 1}, "Worker": {"active": 1}},
    )
    pods = [
        pod("pi-worker-0", "Running"),
        pod(
            "pi-worker-1",
            "Pending",
            conditions=[
                {"type": "PodScheduled", "status": "False", "reason": "Unschedulable", "message": "no room"}
            ],
        ),
    ]
    events = [
        {
            "type": "Normal",
            "reason": "MPIJobCreated",
            "message": "MPIJob team-a/pi is created.",
            "lastTimestamp": "2026-01-01T11:50:01Z",
            "involvedObject": {"kind": "MPIJob", "name": "pi"},
        },
    ]

    text = render.describe(described, pods, events, NOW)

    assert text.splitlines()[:4] == [
        "Name:               pi",
        "Namespace:          team-a",
        "Phase:              Running",
        "Created:            2026-01-01T11:50:00Z (10m ago)",
    ]
    assert "Completed:          <none>" in text
    assert "  Launcher   1         1        0           0" in text
    assert "  Worker     2         1        0           0" in text
    assert "  Running   True     MPIJobRunning   9m      MPIJob team-a/pi is running." in text
    assert "  pi-worker-1   Pending   Unschedulable: no room" in text
    assert "pi-worker-0" not in text
    assert "  9m59s   Normal   MPIJobCreated   mpijob/pi   MPIJob team-a/pi is created." in text


def test_describe_of_a_new_job_says_none_where_nothing_is_known() -> None:
    text = render.describe(job("pi", "a", "2026-01-01T11:59:59Z"), [], [], NOW)
    assert "Phase:              Pending" in text
    assert "Conditions:\n  <none>" in text
    assert "Problem pods:\n  <none> (0 pods)" in text
    assert "Events:\n  <none>" in text


def test_describe_shows_the_progress_the_status_reports_and_when_it_was_read() -> None:
    progress = {"done": 3, "text": "3", "metrics": {"loss": "0.5"}, "lastUpdateTime": "2026-01-01T11:59:30Z"}
    text = render.describe(job("pi", "a", "2026-01-01T11:00:00Z", progress=progress), [], [], NOW)

    assert "Progress:           3 (loss=0.5), read 30s ago" in text.splitlines()
