"""What is wrong with a job, said on the MPIJob, for jobs that really fail on the real node (issue 17):
the scheduler's own message for requests no node can meet, an OOM-killed worker named in Failed, and the
worker start-up deadline failing a job whose worker never becomes Ready."""

from __future__ import annotations

from typing import Any

import pytest

from mpioperator.testing.cluster import LocalCluster
from mpioperator.testing.jobs import Job
from mpioperator.testing.mpijobs import PI_IMAGES
from mpioperator.testing.operator import OperatorProcess
from mpioperator.testing.wait import wait_for

RUN_TIMEOUT = 180.0
IMAGE = PI_IMAGES["OpenMPI"]


@pytest.fixture
def ns(real_cluster: LocalCluster, make_namespace: Any, real_operator: OperatorProcess) -> str:
    name: str = make_namespace(real_cluster)
    return name


def _container(name: str, command: list[str], resources: dict[str, Any], **more: Any) -> dict[str, Any]:
    return {"name": name, "image": IMAGE, "command": command, "resources": resources, **more}


def shell_job(
    name: str,
    *,
    worker: dict[str, Any],
    launcher: list[str],
    workers: int = 1,
    annotations: dict[str, str] | None = None,
    spec: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """An MPIJob whose pods run shell commands of the pi image instead of MPI: how it fails is the test."""
    small = {"requests": {"cpu": "50m", "memory": "32Mi"}, "limits": {"cpu": "500m", "memory": "64Mi"}}
    body: dict[str, Any] = {
        "apiVersion": "kubeflow.org/v2beta1",
        "kind": "MPIJob",
        "metadata": {"name": name, "annotations": annotations or {}},
        "spec": {
            "runPolicy": {"cleanPodPolicy": "Running", "backoffLimit": 0},
            "mpiReplicaSpecs": {
                "Launcher": {
                    "replicas": 1,
                    "template": {"spec": {"containers": [_container("launcher", launcher, small)]}},
                },
                "Worker": {"replicas": workers, "template": {"spec": {"containers": [worker]}}},
            },
            **(spec or {}),
        },
    }
    return body


def describe(cluster: LocalCluster, ns: str, job: str) -> str:
    """`kubectl describe mpijob`, as a user reads it."""
    return cluster.kubectl("-n", ns, "describe", "mpijob", job).stdout


def test_requests_no_node_can_meet_show_the_schedulers_message_on_the_mpijob(
    real_cluster: LocalCluster, ns: str
) -> None:
    huge = {"requests": {"cpu": "64", "memory": "32Mi"}}
    job = Job(real_cluster, ns, "huge").submit(
        shell_job(
            "huge",
            workers=2,
            worker=_container("worker", ["sleep", "3600"], huge),
            launcher=["true"],
            spec={"launcherCreationPolicy": "WaitForWorkersReady"},
        )
    )

    def both_named() -> dict[str, Any] | None:
        # The scheduler tries the two workers one after the other: the condition names one, then both.
        found = job.condition("PodsStuck")
        return found if found and "huge-worker-1" in found["message"] else None

    stuck = wait_for(both_named, timeout=RUN_TIMEOUT, what="both workers named unschedulable")
    assert stuck is not None
    assert stuck["reason"] == "Unschedulable", stuck
    assert stuck["message"].startswith("Unschedulable: workers huge-worker-0, huge-worker-1: "), stuck
    assert "Insufficient cpu" in stuck["message"], stuck
    got = real_cluster.kubectl("-n", ns, "get", "mpijobs").stdout
    assert got.split()[:5] == ["NAME", "PHASE", "STATE", "WORKERS", "AGE"], got
    assert got.splitlines()[1].split()[:3] == ["huge", "Pending", "PodsStuck"], got
    text = describe(real_cluster, ns, "huge")
    assert "Insufficient cpu" in text and "Unschedulable" in text, text
    print(f"$ kubectl get mpijobs\n{got}\n$ kubectl describe mpijob huge\n{text}")


def test_an_oom_killed_worker_names_itself_in_failed(real_cluster: LocalCluster, ns: str) -> None:
    limited = {"requests": {"cpu": "50m", "memory": "32Mi"}, "limits": {"cpu": "500m", "memory": "32Mi"}}
    # `tail` keeps the last lines of what it reads; /dev/zero has no line ends, so it keeps it all.
    hog = ["sh", "-c", "head -c 512m /dev/zero | tail"]
    job = Job(real_cluster, ns, "oom").submit(
        shell_job(
            "oom",
            worker=_container("worker", hog, limited),
            # The launcher gives up once the worker is gone, as mpirun would.
            launcher=["sh", "-c", "sleep 20; echo 'rank 1 on oom-worker-0 was killed' >&2; exit 1"],
        )
    )

    failed = job.wait_condition("Failed", timeout=RUN_TIMEOUT)

    assert "worker oom-worker-0 was OOMKilled (exit code 137)" in failed["message"], failed
    assert "rank 1 on oom-worker-0 was killed" in failed["message"], failed  # the launcher's last words
    assert "exit code 1" in failed["message"], failed
    print(f"$ kubectl describe mpijob oom\n{describe(real_cluster, ns, 'oom')}")


def test_a_worker_never_ready_fails_the_job_at_the_start_up_deadline_and_is_cleaned_up(
    real_cluster: LocalCluster, ns: str
) -> None:
    never_ready = _container(
        "worker",
        ["sleep", "3600"],
        {"requests": {"cpu": "50m", "memory": "32Mi"}},
        readinessProbe={"exec": {"command": ["false"]}, "periodSeconds": 1},
    )
    job = Job(real_cluster, ns, "late").submit(
        shell_job(
            "late",
            workers=2,
            worker=never_ready,
            launcher=["true"],
            annotations={"mpioperator.io/worker-startup-deadline-seconds": "15"},
            spec={"launcherCreationPolicy": "WaitForWorkersReady"},
        )
    )

    failed = job.wait_condition("Failed", timeout=RUN_TIMEOUT)

    assert failed["reason"] == "WorkerStartupDeadlineExceeded", failed
    assert failed["message"].startswith("2 of 2 workers not Ready within 15s of the job's start: "), failed
    assert "late-worker-0 (not Ready)" in failed["message"], failed
    assert ((job.get() or {}).get("status") or {}).get("phase") == "Failed"
    assert job.launcher() is None
    wait_for(lambda: job.pods("worker") == [], timeout=60, what="workers cleaned up (cleanPodPolicy Running)")
    print(f"$ kubectl describe mpijob late\n{describe(real_cluster, ns, 'late')}")
