"""MPIJobs run to the end on the full local cluster, the operator running as a separate process."""

from __future__ import annotations

import functools
from datetime import UTC, datetime
from typing import Any

import pytest

from mpioperator.testing.cluster import LocalCluster
from mpioperator.testing.jobs import CHILD_KINDS, TIMEOUT, Job
from mpioperator.testing.mpijobs import mpijob
from mpioperator.testing.operator import OperatorProcess
from mpioperator.testing.simulation import READY_AFTER
from mpioperator.testing.wait import wait_for


@pytest.fixture
def ns(installed_cluster: LocalCluster, make_namespace: Any, operator: OperatorProcess) -> str:
    name: str = make_namespace(installed_cluster)
    return name


@pytest.mark.parametrize("implementation", ["OpenMPI", "Intel", "MPICH"])
def test_pi_reaches_succeeded(installed_cluster: LocalCluster, ns: str, implementation: str) -> None:
    job = Job(installed_cluster, ns, f"pi-{implementation.lower()}").submit(
        mpijob(
            f"pi-{implementation.lower()}", workers=2, implementation=implementation, launcher_runs_for="2s"
        )
    )
    job.wait_condition("Succeeded")
    status = (job.get() or {})["status"]
    assert status["replicaStatuses"]["Launcher"] == {"succeeded": 1}
    assert status.get("completionTime")
    wait_for(
        lambda: job.pods("worker") == [], timeout=TIMEOUT, what="workers removed (cleanPodPolicy Running)"
    )


def test_launcher_failing_past_backoff_limit_fails_the_job(installed_cluster: LocalCluster, ns: str) -> None:
    job = Job(installed_cluster, ns, "crash").submit(
        mpijob(
            "crash", workers=1, launcher_runs_for="1s", launcher_exit_code=1, run_policy={"backoffLimit": 1}
        )
    )
    failed = job.wait_condition("Failed", timeout=180)
    assert failed["reason"].startswith("BackoffLimitExceeded")


def test_suspended_job_has_no_pods_until_resumed_then_succeeds(
    installed_cluster: LocalCluster, ns: str
) -> None:
    job = Job(installed_cluster, ns, "later").submit(
        mpijob("later", workers=2, launcher_runs_for="2s", run_policy={"suspend": True})
    )
    job.wait_condition("Suspended")
    launcher = job.launcher()
    assert launcher is not None and launcher["spec"]["suspend"] is True
    assert job.pods() == []
    job.patch({"spec": {"runPolicy": {"suspend": False}}})
    job.wait_condition("Succeeded")


def test_wait_for_workers_ready_creates_launcher_after_workers_are_ready(
    installed_cluster: LocalCluster, ns: str
) -> None:
    job = Job(installed_cluster, ns, "patient").submit(
        mpijob(
            "patient",
            workers=2,
            launcher_runs_for="1s",
            worker_annotations={READY_AFTER: "3s"},
            spec={"launcherCreationPolicy": "WaitForWorkersReady"},
        )
    )
    job.wait_condition("Succeeded")
    launcher = job.launcher()
    assert launcher is not None
    # Workers are gone by now (cleanPodPolicy Running), so compare with the Running condition's evidence:
    # the launcher cannot have been created before the first worker could possibly be Ready.
    created = (job.get() or {})["metadata"]["creationTimestamp"]
    assert launcher["metadata"]["creationTimestamp"] >= created
    gap = datetime.fromisoformat(launcher["metadata"]["creationTimestamp"]) - datetime.fromisoformat(created)
    assert gap.total_seconds() >= 3


def test_workers_scale_up_and_down_while_running(installed_cluster: LocalCluster, ns: str) -> None:
    job = Job(installed_cluster, ns, "elastic").submit(mpijob("elastic", workers=2, launcher_runs_for="600s"))
    wait_for(lambda: len(job.pods("worker")) == 2, timeout=TIMEOUT, what="2 workers")
    job.patch({"spec": {"mpiReplicaSpecs": {"Worker": {"replicas": 4}}}})
    wait_for(lambda: len(job.pods("worker")) == 4, timeout=TIMEOUT, what="4 workers")
    job.patch({"spec": {"mpiReplicaSpecs": {"Worker": {"replicas": 1}}}})
    wait_for(
        lambda: [p["metadata"]["name"] for p in job.pods("worker")] == ["elastic-worker-0"],
        timeout=TIMEOUT,
        what="1 worker",
    )
    hostfile = installed_cluster.rest.get(f"/api/v1/namespaces/{ns}/configmaps/elastic-config")["data"][
        "hostfile"
    ]
    assert hostfile == f"elastic-worker-0.elastic.{ns}.svc slots=1\n"


@pytest.mark.parametrize("policy", ["Running", "All"])
def test_clean_pod_policy_running_or_all_removes_the_workers_of_a_finished_job(
    installed_cluster: LocalCluster, ns: str, policy: str
) -> None:
    name = f"clean-{policy.lower()}"
    job = Job(installed_cluster, ns, name).submit(
        mpijob(name, workers=2, launcher_runs_for="2s", run_policy={"cleanPodPolicy": policy})
    )
    job.wait_condition("Succeeded")
    wait_for(lambda: job.pods("worker") == [], timeout=TIMEOUT, what="the workers removed")


def _running_workers(job: Job) -> list[tuple[str, str]]:
    return sorted(
        (p["metadata"]["name"], p["metadata"]["uid"])
        for p in job.pods("worker")
        if p.get("status", {}).get("phase") == "Running"
    )


def test_clean_pod_policy_none_leaves_the_workers_of_a_finished_job_running(
    installed_cluster: LocalCluster, ns: str, operator: OperatorProcess
) -> None:
    """As upstream: a finished job under None is left alone, its workers as they were (upstream-behaviour
    §2.5 step 8). Only a sync of the finished job could remove them, so the test waits for one."""
    job = Job(installed_cluster, ns, "clean-none").submit(
        mpijob("clean-none", workers=2, launcher_runs_for="5s", run_policy={"cleanPodPolicy": "None"})
    )
    running = wait_for(
        lambda: _running_workers(job), timeout=TIMEOUT, what="2 workers Running", done=lambda w: len(w) == 2
    )
    job.wait_condition("Succeeded")
    touched = datetime.now(UTC)
    job.patch({"metadata": {"labels": {"touched": "yes"}}})
    wait_for(
        functools.partial(operator.syncs_started_after, f"{ns}/clean-none", touched),
        timeout=TIMEOUT,
        what="a sync of the finished job after the touch",
    )
    assert [name for name, _ in running] == ["clean-none-worker-0", "clean-none-worker-1"]
    assert _running_workers(job) == running, "the same workers, still Running and not being deleted"


def test_default_clean_pod_policy_is_running(installed_cluster: LocalCluster, ns: str) -> None:
    """D5 #1: upstream's code default is None, leaving workers (and their GPUs) behind."""
    job = Job(installed_cluster, ns, "tidy").submit(mpijob("tidy", workers=2, launcher_runs_for="1s"))
    job.wait_condition("Succeeded")
    wait_for(lambda: job.pods("worker") == [], timeout=TIMEOUT, what="workers removed")


def test_deleting_the_mpijob_removes_every_child(installed_cluster: LocalCluster, ns: str) -> None:
    job = Job(installed_cluster, ns, "gone").submit(mpijob("gone", workers=2, launcher_runs_for="600s"))
    wait_for(lambda: len(job.pods()) == 3, timeout=TIMEOUT, what="launcher and 2 workers")
    installed_cluster.rest.delete(job.path)
    rest = installed_cluster.rest

    def leftovers() -> list[str]:
        found = []
        for root, plural in CHILD_KINDS:
            for item in rest.get(f"{root}/namespaces/{ns}/{plural}")["items"]:
                if item["metadata"]["name"].startswith("gone") and not item["metadata"].get(
                    "deletionTimestamp"
                ):
                    found.append(f"{plural}/{item['metadata']['name']}")
        return found

    wait_for(leftovers, timeout=TIMEOUT, what="no child left", done=lambda left: not left)


def test_evicted_worker_fails_the_job_and_cleans_up(installed_cluster: LocalCluster, ns: str) -> None:
    job = Job(installed_cluster, ns, "evicted").submit(mpijob("evicted", workers=2, launcher_runs_for="600s"))
    job.wait_condition("Running")
    installed_cluster.rest.merge_patch(
        f"/api/v1/namespaces/{ns}/pods/evicted-worker-1/status",
        {"status": {"phase": "Failed", "reason": "Evicted", "message": "The node was low on memory."}},
    )
    failed = job.wait_condition("Failed")
    assert failed["reason"] == "MPIJobEvicted"
    assert (job.get() or {})["status"].get("completionTime")
    wait_for(
        lambda: [p["metadata"]["name"] for p in job.pods("worker")] == ["evicted-worker-1"],
        timeout=TIMEOUT,
        what="the running worker cleaned up",
    )


def test_job_managed_by_multikueue_is_untouched(installed_cluster: LocalCluster, ns: str) -> None:
    job = Job(installed_cluster, ns, "remote").submit(
        mpijob("remote", workers=1, run_policy={"managedBy": "kueue.x-k8s.io/multikueue"})
    )
    witness = Job(installed_cluster, ns, "witness").submit(
        mpijob("witness", workers=1, launcher_runs_for="1s")
    )
    witness.wait_condition("Succeeded")
    assert (job.get() or {}).get("status") in (None, {})
    assert job.pods() == [] and job.launcher() is None


def test_kubectl_get_mpijobs_shows_state(installed_cluster: LocalCluster, ns: str) -> None:
    job = Job(installed_cluster, ns, "shown").submit(mpijob("shown", workers=1, launcher_runs_for="1s"))
    job.wait_condition("Succeeded")
    out = installed_cluster.kubectl("-n", ns, "get", "mpijobs").stdout
    assert "shown" in out and "Succeeded" in out


def test_a_hostfile_of_pod_ips_lists_each_workers_ip_and_the_job_succeeds(
    installed_cluster: LocalCluster, ns: str
) -> None:
    body = mpijob(
        "by-ip",
        workers=3,
        launcher_runs_for="2s",
        worker_annotations={READY_AFTER: "2s"},
        annotations={"mpioperator.io/hostfile-addresses": "ip"},
    )
    job = Job(installed_cluster, ns, "by-ip").submit(body)
    wait_for(lambda: job.launcher() is not None, timeout=TIMEOUT, what="the launcher Job")
    workers = sorted(job.pods("worker"), key=lambda p: int(p["metadata"]["name"].rsplit("-", 1)[1]))
    ips = [p["status"].get("podIP") for p in workers]
    assert len(ips) == 3 and all(ips), ips
    config = installed_cluster.rest.get(f"/api/v1/namespaces/{ns}/configmaps/by-ip-config")
    # Made only once the ConfigMap listed them all: the launcher's pod mounts it as it is then.
    assert config["data"]["hostfile"] == "".join(f"{ip} slots=1\n" for ip in ips)
    job.wait_condition("Succeeded")
