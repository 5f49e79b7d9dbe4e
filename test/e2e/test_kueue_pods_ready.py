"""Kueue's WaitForPodsReady and our `Running` condition, on the session's Kueue cluster with kwok nodes.

For an MPIJob, Kueue's PodsReady is our `Running` condition: True once the launcher pod and every worker
pod run (as upstream sets it). Kueue evicts an admitted job whose `Running` does not come within its
timeout (mpioperator.testing.kueue_manifests.PODS_READY_TIMEOUT_SECONDS here; 30 minutes by default since
Kueue v0.19), and requeues it after a backoff. These tests show when `Running` comes while pods start
slowly, that a job which never gets there is evicted and requeued, and that one that runs is never
evicted however long it runs. Each test has a ClusterQueue of its own and nodes of its own in a flavor of
this module, so what fits is exact.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from mpioperator.testing import kueue_objects as ko
from mpioperator.testing.cluster import LocalCluster
from mpioperator.testing.jobs import Job
from mpioperator.testing.kueue import Kueue
from mpioperator.testing.kueue_manifests import PODS_READY_TIMEOUT_SECONDS
from mpioperator.testing.nodes import NodeShape
from mpioperator.testing.operator import OperatorProcess
from mpioperator.testing.simulation import READY_AFTER
from mpioperator.testing.wait import wait_for
from test.e2e.test_kueue import (
    JOB_NAME,
    JOB_ROLE,
    POOL_LABEL,
    TAINT_KEY,
    TOLERATION,
    WORKERS,
    Watched,
    in_order,
    is_true,
    queue,
    queued_job,
    suspended,
)

FLAVOR = "kueue-ready"
HOSTNAME = "kubernetes.io/hostname"
TIMEOUT = 180.0
# Longer than the readiness timeout: enough for Kueue to evict a job that never gets Running.
EVICTION_WAIT = PODS_READY_TIMEOUT_SECONDS + TIMEOUT

AddNodes = Callable[[int, str], list[str]]


@pytest.fixture(scope="module")
def ready_flavor(kueue_process: Kueue) -> None:
    """A flavor whose tainted nodes each test adds itself (`add_nodes`)."""
    kueue_process.apply(
        ko.resource_flavor(FLAVOR, node_labels={POOL_LABEL: FLAVOR}, tolerations=[TOLERATION])
    )


@pytest.fixture
def ns(
    kueue_cluster: LocalCluster, make_namespace: Any, kueue_operator: OperatorProcess, ready_flavor: None
) -> str:
    name: str = make_namespace(kueue_cluster)
    return name


@pytest.fixture
def add_nodes(kueue_cluster: LocalCluster) -> Iterator[AddNodes]:
    """Adds tainted kwok nodes of the flavor, of `cpu` CPUs each; they are removed after the test."""
    added: list[str] = []

    def add(count: int, cpu: str) -> list[str]:
        names = kueue_cluster.add_nodes(count, NodeShape(cpu=cpu, labels={POOL_LABEL: FLAVOR}), prefix=FLAVOR)
        taint = {"key": TAINT_KEY, "value": "true", "effect": "NoSchedule"}
        for node in names:
            kueue_cluster.rest.merge_patch(f"/api/v1/nodes/{node}", {"spec": {"taints": [taint]}})
        added.extend(names)
        return names

    yield add
    kueue_cluster.remove_nodes(added)


@pytest.fixture
def lq(kueue_process: Kueue, ns: str, add_nodes: AddNodes) -> str:
    """The test's queue, in this module's flavor, which has one node of 4 CPUs to start with."""
    add_nodes(1, "4")
    return queue(kueue_process, ns, flavor=FLAVOR)


@pytest.fixture
def watched(kueue_cluster: LocalCluster, ns: str, lq: str) -> Watched:
    """Every version of the namespace's objects from the moment its queue is there."""
    return Watched(kueue_cluster, ns)


def parse_time(stamp: str) -> dt.datetime:
    return dt.datetime.fromisoformat(stamp)


def condition(obj: dict[str, Any], kind: str) -> dict[str, Any] | None:
    return next((c for c in (obj.get("status") or {}).get("conditions") or () if c["type"] == kind), None)


def running_true(obj: dict[str, Any]) -> bool:
    found = condition(obj, "Running")
    return found is not None and found["status"] == "True"


def active(obj: dict[str, Any], role: str) -> int:
    return int(((obj.get("status") or {}).get("replicaStatuses") or {}).get(role, {}).get("active") or 0)


def workload_of(kueue: Kueue, ns: str, job: str) -> dict[str, Any] | None:
    for workload in kueue.workloads(ns):
        if any(ref.get("name") == job for ref in workload["metadata"].get("ownerReferences") or ()):
            return workload
    return None


def first_true(versions: list[dict[str, dict[str, Any]]], kind: str) -> dict[str, Any]:
    return next(v[kind] for v in versions if is_true(v, kind))


def test_running_waits_for_every_worker_so_kueue_never_evicts_a_job_whose_pods_start_slowly(
    kueue_cluster: LocalCluster, ns: str, add_nodes: AddNodes, lq: str, watched: Watched
) -> None:
    cluster = kueue_cluster
    # One node at first (lq's): the workers must run on different nodes, so the second worker stays Pending
    # (as if for a node a cluster autoscaler brings) while the launcher and the first worker run.
    body = queued_job(
        "slow",
        lq,
        runs_for=f"{PODS_READY_TIMEOUT_SECONDS + 5}s",
        # A slow image pull: each worker stays Pending this long once bound.
        worker_annotations={READY_AFTER: "5s"},
    )
    spread = {
        "labelSelector": {"matchLabels": {JOB_NAME: "slow", JOB_ROLE: "worker"}},
        "topologyKey": HOSTNAME,
    }
    worker_spec = body["spec"]["mpiReplicaSpecs"]["Worker"]["template"]["spec"]
    worker_spec["affinity"] = {
        "podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [spread]}
    }
    job = Job(cluster, ns, "slow").submit(body)

    # The operator has counted the launcher and one worker running: this very status says so, and it
    # must not say Running.
    def one_worker_seen() -> dict[str, Any] | None:
        found = job.get()
        return found if found and active(found, "Launcher") == 1 and active(found, "Worker") == 1 else None

    seen = wait_for(
        one_worker_seen, timeout=TIMEOUT, what="the operator to count the launcher and one worker"
    )
    assert seen is not None
    assert not running_true(seen), f"Running with one of {WORKERS} workers running: {seen['status']}"
    pending = [p for p in job.pods("worker") if p["status"].get("phase") == "Pending"]
    assert len(pending) == 1, [p["status"] for p in job.pods("worker")]
    add_nodes(1, "4")
    job.wait_condition("Running", timeout=TIMEOUT)
    job.wait_condition("Succeeded", timeout=TIMEOUT)
    watched.stop()

    # The version of the job that first said Running counted the launcher and every worker running (it
    # stays True until the job finishes, as upstream's: the launcher pod may end before its Job does), and
    # Running came no earlier than the last worker's Ready (the pods' and the job's times are both the API
    # server's clock, to the second).
    versions = [e.object for e in watched.mpijobs.events() if e.name == "slow"]
    first_running = next(v for v in versions if running_true(v))
    assert active(first_running, "Worker") == WORKERS, first_running["status"]
    assert active(first_running, "Launcher") == 1, first_running["status"]
    running = condition(first_running, "Running")
    assert running is not None
    ready_times = []
    for event in watched.pods.events():
        ready = condition(event.object, "Ready")
        if event.label(JOB_ROLE) == "worker" and ready is not None and ready["status"] == "True":
            ready_times.append(parse_time(ready["lastTransitionTime"]))
    assert ready_times, "no worker was ever Ready"
    assert parse_time(running["lastTransitionTime"]) >= max(ready_times)
    # Kueue saw PodsReady from that Running, within its timeout, and never evicted the job, although it ran
    # for longer than the timeout after its admission; each pod was made once.
    workload = watched.workload_conditions("slow")
    assert not any(is_true(v, "Evicted") for v in workload), workload
    admitted = parse_time(first_true(workload, "Admitted")["lastTransitionTime"])
    pods_ready = parse_time(first_true(workload, "PodsReady")["lastTransitionTime"])
    assert pods_ready - admitted < dt.timedelta(seconds=PODS_READY_TIMEOUT_SECONDS)
    finished = parse_time(first_true(workload, "Finished")["lastTransitionTime"])
    assert finished - admitted > dt.timedelta(seconds=PODS_READY_TIMEOUT_SECONDS)
    assert len(watched.pods_of("slow", "worker")) == WORKERS
    assert len(watched.pods_of("slow", "launcher")) == 1


def test_job_whose_workers_never_become_ready_is_evicted_by_kueue_after_the_timeout_and_requeued(
    kueue_cluster: LocalCluster, kueue_process: Kueue, ns: str, lq: str, watched: Watched
) -> None:
    cluster, kueue = kueue_cluster, kueue_process
    # Workers that never start (an image that cannot be pulled), beside a launcher that would run for ever.
    body = queued_job("stuck", lq, runs_for="1h", worker_annotations={READY_AFTER: "1h"})
    job = Job(cluster, ns, "stuck").submit(body)
    wait_for(lambda: suspended(job) is False, timeout=TIMEOUT, what="Kueue to admit the job")

    def evicted() -> dict[str, Any] | None:
        workload = workload_of(kueue, ns, "stuck")
        found = condition(workload, "Evicted") if workload else None
        return found if found and found["status"] == "True" else None

    eviction = wait_for(evicted, timeout=EVICTION_WAIT, what="Kueue to evict the job that never got Running")
    assert eviction is not None
    name = (workload_of(kueue, ns, "stuck") or {})["metadata"]["name"]
    assert eviction["reason"] == "PodsReadyTimeout", eviction
    assert eviction["message"] == f"Exceeded the PodsReady timeout {ns}/{name}", eviction
    # Requeued after the backoff and admitted again: the job runs again, with new pods.
    wait_for(
        lambda: len(watched.pods_of("stuck", "worker")) == 2 * WORKERS and suspended(job) is False,
        timeout=TIMEOUT,
        what="Kueue to requeue and admit the job again, and the operator to make its pods again",
    )
    watched.stop()

    workload = watched.workload_conditions("stuck")
    assert in_order(workload, "Admitted", "Evicted", "Requeued", "Admitted"), workload
    evicted_at = parse_time(first_true(workload, "Evicted")["lastTransitionTime"])
    admitted_at = parse_time(first_true(workload, "Admitted")["lastTransitionTime"])
    assert evicted_at - admitted_at >= dt.timedelta(seconds=PODS_READY_TIMEOUT_SECONDS)
    # Kueue marked it not Requeued for the backoff, then Requeued.
    requeued = [v["Requeued"] for v in workload if "Requeued" in v]
    held = next(i for i, c in enumerate(requeued) if c["status"] == "False")
    assert requeued[held]["reason"] == "PodsReadyTimeout", requeued
    assert any(c["status"] == "True" for c in requeued[held:]), requeued
    final = workload_of(kueue, ns, "stuck")
    assert final is not None and final["status"]["requeueState"]["count"] == 1, final and final["status"]
    # The job: never Running; suspended by the eviction, its first run's pods deleted, then resumed.
    versions = [e.object for e in watched.mpijobs.events() if e.name == "stuck"]
    assert not any(running_true(v) for v in versions)
    flags = [v["spec"]["runPolicy"].get("suspend") for v in versions]
    collapsed = [f for i, f in enumerate(flags) if i == 0 or f != flags[i - 1]]
    assert collapsed == [True, False, True, False], flags
    assert len(watched.pods_of("stuck", "launcher")) == 2
    assert len(watched.launcher_jobs_of("stuck")) == 1, "the launcher Job is kept across the eviction"
    first_run = {e.name for e in watched.pods_of("stuck", "worker")[:WORKERS]}
    deleted = {e.name for e in watched.pods.events() if e.type == "DELETED"}
    assert first_run <= deleted, f"the first run's workers were left: {first_run - deleted}"
    # Kueue says so itself: its event on the Workload, and its log line.
    events = cluster.rest.get(f"/api/v1/namespaces/{ns}/events")["items"]
    reasons = {e["reason"] for e in events if e["involvedObject"]["kind"] == "Workload"}
    assert "EvictedDueToPodsReadyTimeout" in reasons, reasons
    log = kueue.log_path.read_text(errors="replace")
    assert any("exceeding the PodsReady timeout" in line and ns in line for line in log.splitlines()), (
        f"no eviction line for {ns} in {kueue.log_path}"
    )


def test_job_that_runs_longer_than_the_readiness_timeout_is_never_evicted(
    kueue_cluster: LocalCluster, ns: str, lq: str, watched: Watched
) -> None:
    cluster = kueue_cluster
    job = Job(cluster, ns, "long").submit(
        queued_job("long", lq, runs_for=f"{PODS_READY_TIMEOUT_SECONDS + 10}s")
    )
    job.wait_condition("Succeeded", timeout=EVICTION_WAIT)
    watched.stop()

    workload = watched.workload_conditions("long")
    assert not any(is_true(v, "Evicted") for v in workload), workload
    assert in_order(workload, "Admitted", "PodsReady", "Finished"), workload
    admitted = parse_time(first_true(workload, "Admitted")["lastTransitionTime"])
    finished = parse_time(first_true(workload, "Finished")["lastTransitionTime"])
    assert finished - admitted > dt.timedelta(seconds=PODS_READY_TIMEOUT_SECONDS)
    # Admitted once and resumed once: one launcher pod and one pod per worker in all.
    flags = [
        e.object["spec"]["runPolicy"].get("suspend") for e in watched.mpijobs.events() if e.name == "long"
    ]
    assert [f for i, f in enumerate(flags) if i == 0 or f != flags[i - 1]] == [True, False], flags
    assert len(watched.pods_of("long", "launcher")) == 1
    assert len(watched.pods_of("long", "worker")) == WORKERS
