"""Kueue v0.19 queueing MPIJobs beside the operator, on one shared full-tier cluster with kwok nodes.

Kueue's own webhook suspends each queued job at creation and its controller admits it against the
ClusterQueue's quota, preempts it, requeues it and resumes it; the operator only follows
`runPolicy.suspend` and the pod templates Kueue edits. Each test has its own ClusterQueue and LocalQueue,
so quotas never mix; the nodes and flavors are shared. Every pod, launcher Job and MPIJob version is read
from a watch (mpioperator.testing.history), so what was created, and in which order, is exact.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from mpioperator.testing import kueue_objects as ko
from mpioperator.testing.cluster import LocalCluster
from mpioperator.testing.history import Event, History
from mpioperator.testing.jobs import Job
from mpioperator.testing.kueue import Kueue
from mpioperator.testing.mpijobs import mpijob
from mpioperator.testing.nodes import NodeShape
from mpioperator.testing.operator import OperatorProcess
from mpioperator.testing.wait import wait_for

JOB_NAME = "training.kubeflow.org/job-name"
JOB_ROLE = "training.kubeflow.org/job-role"
POOL_LABEL = "mpioperator.io/pool"
TAINT_KEY = "mpioperator.io/kueue"
TOLERATION = {"key": TAINT_KEY, "operator": "Exists", "effect": "NoSchedule"}
BLOCK = "mpioperator.io/block"
RACK = "mpioperator.io/rack"
FLAVOR = "kueue-pool"
TAS_FLAVOR = "kueue-racks"
TOPOLOGY = "blocks-racks"
TIMEOUT = 180.0
# A job: a launcher asking for 500m and two workers asking for one CPU each, 2.5 CPUs in all.
WORKERS = 2


@pytest.fixture(scope="module")
def flavors(kueue_cluster: LocalCluster, kueue_process: Kueue) -> Iterator[None]:
    """Tainted kwok nodes that only Kueue's flavors tolerate: two plain ones (4 CPUs each), and four of 2
    CPUs in two racks of one block for topology-aware scheduling; the flavors, priorities and topology."""
    cluster = kueue_cluster
    pool = cluster.add_nodes(2, NodeShape(cpu="4", labels={POOL_LABEL: FLAVOR}), prefix="kueue-pool")
    racks = []
    for rack in ("r1", "r2"):
        shape = NodeShape(cpu="2", labels={POOL_LABEL: TAS_FLAVOR, BLOCK: "b1", RACK: rack})
        racks += cluster.add_nodes(2, shape, prefix=f"kueue-{rack}")
    for node in pool + racks:
        taint = {"key": TAINT_KEY, "value": "true", "effect": "NoSchedule"}
        cluster.rest.merge_patch(f"/api/v1/nodes/{node}", {"spec": {"taints": [taint]}})
    kueue_process.apply(
        ko.resource_flavor(FLAVOR, node_labels={POOL_LABEL: FLAVOR}, tolerations=[TOLERATION]),
        ko.topology(TOPOLOGY, [BLOCK, RACK, ko.HOSTNAME_LABEL]),
        ko.resource_flavor(
            TAS_FLAVOR, node_labels={POOL_LABEL: TAS_FLAVOR}, tolerations=[TOLERATION], topology_name=TOPOLOGY
        ),
        ko.workload_priority_class("low", 100),
        ko.workload_priority_class("high", 1000),
    )
    yield
    cluster.remove_nodes(pool + racks)


@pytest.fixture
def ns(
    kueue_cluster: LocalCluster, make_namespace: Any, kueue_operator: OperatorProcess, flavors: None
) -> str:
    name: str = make_namespace(kueue_cluster)
    return name


class Watched:
    """The namespace's MPIJobs, Kueue Workloads, launcher Jobs and pods, every version from now on."""

    def __init__(self, cluster: LocalCluster, ns: str) -> None:
        self.mpijobs = History(cluster.rest, f"/apis/kubeflow.org/v2beta1/namespaces/{ns}/mpijobs")
        self.workloads = History(cluster.rest, ko.path("Workload", namespace=ns))
        self.jobs = History(cluster.rest, f"/apis/batch/v1/namespaces/{ns}/jobs")
        self.pods = History(cluster.rest, f"/api/v1/namespaces/{ns}/pods")

    def stop(self) -> None:
        for history in (self.mpijobs, self.workloads, self.jobs, self.pods):
            history.stop()

    def workload_conditions(self, job: str) -> list[dict[str, dict[str, Any]]]:
        """The conditions of each version of the job's Workload, in order, by type."""
        return [
            {c["type"]: c for c in (e.object.get("status") or {}).get("conditions") or ()}
            for e in self.workloads.events()
            if any(ref.get("name") == job for ref in e.object["metadata"].get("ownerReferences") or ())
        ]

    def pods_of(self, job: str, role: str) -> list[Event]:
        return [
            e for e in self.pods.created().values() if e.label(JOB_NAME) == job and e.label(JOB_ROLE) == role
        ]

    def launcher_jobs_of(self, job: str) -> list[Event]:
        return [e for e in self.jobs.created().values() if e.name == f"{job}-launcher"]


def queue(kueue: Kueue, ns: str, *, flavor: str = FLAVOR, cpu: str = "3", **options: Any) -> str:
    """A ClusterQueue of its own for the test (named after its namespace) and a LocalQueue for it."""
    kueue.apply(ko.cluster_queue(ns, quotas={flavor: {"cpu": cpu}}, **options), ko.local_queue("lq", ns, ns))
    return "lq"


def queued_job(
    name: str,
    queue_name: str,
    *,
    runs_for: str,
    priority: str | None = None,
    annotations: dict[str, str] | None = None,
    worker_annotations: dict[str, str] | None = None,
) -> dict[str, Any]:
    """A job of WORKERS workers queued to `queue_name`; `annotations` go on both pod templates,
    `worker_annotations` on the workers' only."""
    body = mpijob(name, workers=WORKERS, launcher_runs_for=runs_for)
    for role, cpu in (("Launcher", "500m"), ("Worker", "1")):
        template = body["spec"]["mpiReplicaSpecs"][role]["template"]
        template["spec"]["containers"][0]["resources"] = {"requests": {"cpu": cpu}}
        extra = {**(annotations or {}), **((worker_annotations or {}) if role == "Worker" else {})}
        if extra:
            template.setdefault("metadata", {}).setdefault("annotations", {}).update(extra)
    return ko.queued(body, queue_name, priority_class=priority)


def suspended(job: Job) -> bool | None:
    found = job.get()
    return None if found is None else bool(found["spec"].get("runPolicy", {}).get("suspend"))


def live_pods(cluster: LocalCluster, ns: str, job: str) -> list[dict[str, Any]]:
    """Every pod of the job, terminating ones included."""
    items: list[dict[str, Any]] = cluster.rest.get(
        f"/api/v1/namespaces/{ns}/pods?labelSelector={JOB_NAME}={job}"
    )["items"]
    return items


def is_true(conditions: dict[str, dict[str, Any]], kind: str) -> bool:
    return conditions.get(kind, {}).get("status") == "True"


def in_order(versions: list[dict[str, dict[str, Any]]], *steps: str) -> bool:
    """Whether the versions, in order, had each of `steps` True, each in a later version than the last."""
    position = 0
    for step in steps:
        position = next((i for i in range(position, len(versions)) if is_true(versions[i], step)), -1)
        if position < 0:
            return False
        position += 1
    return True


def first_index(events: list[Event], match: Any) -> int:
    return next(i for i, e in enumerate(events) if match(e))


def succeeded(event: Event) -> bool:
    conditions = (event.object.get("status") or {}).get("conditions") or ()
    return any(c["type"] == "Succeeded" and c["status"] == "True" for c in conditions)


def test_queued_jobs_are_admitted_in_quota_order_and_the_second_waits_suspended_with_no_pod(
    kueue_cluster: LocalCluster, kueue_process: Kueue, ns: str
) -> None:
    cluster, kueue = kueue_cluster, kueue_process
    lq = queue(kueue, ns)  # 3 CPUs: one 2.5-CPU job at a time
    watched = Watched(cluster, ns)
    first = Job(cluster, ns, "first").submit(queued_job("first", lq, runs_for="8s"))
    # Kueue orders by Workload creation time, to the second: the second job is made once the first holds
    # the quota, so the order is the one this test sets.
    wait_for(lambda: suspended(first) is False, timeout=TIMEOUT, what="Kueue to admit the first job")
    second = Job(cluster, ns, "second").submit(queued_job("second", lq, runs_for="1s"))
    first.wait_condition("Succeeded", timeout=TIMEOUT)
    second.wait_condition("Succeeded", timeout=TIMEOUT)
    watched.stop()

    # Kueue's webhook suspended both at creation; the second stayed suspended until the first finished.
    jobs = watched.mpijobs.events()
    first_done = first_index(jobs, lambda e: e.name == "first" and succeeded(e))
    before = [e for e in jobs[:first_done] if e.name == "second"]
    assert before, "the second job was created after the first finished: nothing was queued"
    assert all(e.object["spec"]["runPolicy"]["suspend"] is True for e in before)
    assert next(e for e in jobs if e.name == "first").object["spec"]["runPolicy"]["suspend"] is True
    # ... and the operator made no pod for it until the first's launcher had finished.
    pods = watched.pods.events()
    launcher_done = first_index(
        pods,
        lambda e: e.label(JOB_NAME) == "first" and e.object.get("status", {}).get("phase") == "Succeeded",
    )
    first_second_pod = first_index(pods, lambda e: e.label(JOB_NAME) == "second")
    assert first_second_pod > launcher_done
    for name in ("first", "second"):
        assert len(watched.launcher_jobs_of(name)) == 1
        assert len(watched.pods_of(name, "launcher")) == 1
        assert len(watched.pods_of(name, "worker")) == WORKERS
    # Kueue held the second's Workload for want of quota, then admitted it.
    second_workload = watched.workload_conditions("second")
    assert any(
        v.get("QuotaReserved", {}).get("status") == "False"
        and "insufficient unused quota" in v["QuotaReserved"].get("message", "")
        for v in second_workload
    ), second_workload
    assert in_order(second_workload, "Admitted", "Finished"), second_workload


def test_high_priority_job_preempts_a_running_one_which_is_requeued_resumed_and_succeeds(
    kueue_cluster: LocalCluster, kueue_process: Kueue, ns: str
) -> None:
    cluster, kueue = kueue_cluster, kueue_process
    lq = queue(kueue, ns, preemption={"withinClusterQueue": "LowerPriority"})
    watched = Watched(cluster, ns)
    low = Job(cluster, ns, "low").submit(queued_job("low", lq, runs_for="15s", priority="low"))
    wait_for(
        lambda: any(p["status"].get("phase") == "Running" for p in low.pods("launcher")),
        timeout=TIMEOUT,
        what="the low-priority job's launcher to run",
    )
    high = Job(cluster, ns, "high").submit(queued_job("high", lq, runs_for="2s", priority="high"))
    wait_for(
        lambda: suspended(low), timeout=TIMEOUT, what="Kueue to preempt and suspend the low-priority job"
    )
    wait_for(
        lambda: not live_pods(cluster, ns, "low"), timeout=TIMEOUT, what="the preempted job's pods to go"
    )
    assert low.condition("Suspended") is not None
    high.wait_condition("Succeeded", timeout=TIMEOUT)
    low.wait_condition("Succeeded", timeout=TIMEOUT)
    watched.stop()

    # Kueue's account of it: admitted, preempted (evicted), requeued, admitted again, finished.
    low_workload = watched.workload_conditions("low")
    assert in_order(low_workload, "Admitted", "Preempted", "Requeued", "Admitted", "Finished"), low_workload
    assert is_true(next(v for v in low_workload if is_true(v, "Preempted")), "Evicted")
    # The low job ran twice (before and after its preemption), the high job once; each run made one
    # launcher pod and one pod per worker, and the launcher Job was kept across the suspension.
    runs = {"low": 2, "high": 1}
    for name, count in runs.items():
        assert len(watched.launcher_jobs_of(name)) == 1
        assert len(watched.pods_of(name, "launcher")) == count
        assert len(watched.pods_of(name, "worker")) == count * WORKERS
    # The flavor's node selector and toleration were on every pod, on both admissions of the low job.
    for event in watched.pods.created().values():
        spec = event.object["spec"]
        assert spec.get("nodeSelector", {}).get(POOL_LABEL) == FLAVOR, event.name
        assert TOLERATION in spec.get("tolerations", []), event.name
    # Nothing left running: only the two finished launcher pods remain.
    remaining = live_pods(cluster, ns, "low") + live_pods(cluster, ns, "high")
    assert sorted((p["metadata"]["labels"][JOB_ROLE], p["status"]["phase"]) for p in remaining) == [
        ("launcher", "Succeeded"),
        ("launcher", "Succeeded"),
    ]
    # The high job was admitted while the low one was suspended, never beside it.
    jobs = watched.mpijobs.events()
    high_runs = first_index(
        jobs, lambda e: e.name == "high" and e.object["spec"]["runPolicy"]["suspend"] is False
    )
    low_stopped = first_index(
        jobs,
        lambda e: (
            e.name == "low" and e.object["spec"]["runPolicy"]["suspend"] is True and e.type == "MODIFIED"
        ),
    )
    assert low_stopped < high_runs


def test_topology_aware_job_gets_one_rack_through_kueues_scheduling_gate(
    kueue_cluster: LocalCluster, kueue_process: Kueue, ns: str
) -> None:
    cluster, kueue = kueue_cluster, kueue_process
    lq = queue(kueue, ns, flavor=TAS_FLAVOR, cpu="8")
    watched = Watched(cluster, ns)
    # 2.5 CPUs: more than one 2-CPU node, within one rack; the launcher and workers share the request.
    annotations = {ko.PODSET_REQUIRED_TOPOLOGY: RACK, ko.PODSET_GROUP_NAME: "job"}
    job = Job(cluster, ns, "racked").submit(queued_job("racked", lq, runs_for="3s", annotations=annotations))
    job.wait_condition("Succeeded", timeout=TIMEOUT)
    watched.stop()

    created = list(watched.pods.created().values())
    assert len(created) == 1 + WORKERS
    for event in created:
        gates = [g["name"] for g in event.object["spec"].get("schedulingGates") or ()]
        assert ko.TOPOLOGY_GATE in gates, f"{event.name} was created without Kueue's gate: {gates}"
    nodes = {}
    for event in watched.pods.events():
        node = event.object["spec"].get("nodeName")
        if node:
            nodes[event.name] = node
            assert not event.object["spec"].get("schedulingGates"), f"{event.name} bound while gated"
    assert set(nodes) == {e.name for e in created}
    racks = {cluster.rest.get(f"/api/v1/nodes/{node}")["metadata"]["labels"][RACK] for node in nodes.values()}
    assert len(racks) == 1, f"pods spread over racks {racks}: {nodes}"
    assert len(set(nodes.values())) > 1, "all pods on one node: the rack was never needed"


def _gated_then_placed_in_one_rack(cluster: LocalCluster, watched: Watched, run: list[Event]) -> set[str]:
    """Asserts that every pod of `run` was created with Kueue's topology gate and bound only once ungated,
    all in one rack; returns the nodes they ran on."""
    names = {e.name for e in run}
    for event in run:
        gates = [g["name"] for g in event.object["spec"].get("schedulingGates") or ()]
        assert ko.TOPOLOGY_GATE in gates, f"{event.name} was created without Kueue's gate: {gates}"
    nodes: dict[str, str] = {}
    for event in watched.pods.events():
        node = event.object["spec"].get("nodeName")
        if event.name in names and node:
            nodes[event.name] = node
            assert not event.object["spec"].get("schedulingGates"), f"{event.name} bound while gated"
    assert set(nodes) == names, f"pods never bound: {names - set(nodes)}"
    racks = {cluster.rest.get(f"/api/v1/nodes/{node}")["metadata"]["labels"][RACK] for node in nodes.values()}
    assert len(racks) == 1, f"pods spread over racks {racks}: {nodes}"
    return set(nodes.values())


def test_topology_gate_holds_every_pod_of_both_runs_of_a_preempted_job_and_each_run_gets_one_rack(
    kueue_cluster: LocalCluster, kueue_process: Kueue, ns: str
) -> None:
    cluster, kueue = kueue_cluster, kueue_process
    # Quota for one 2.5-CPU job at a time in the racked flavor: the high job must preempt the low one.
    lq = queue(kueue, ns, flavor=TAS_FLAVOR, preemption={"withinClusterQueue": "LowerPriority"})
    watched = Watched(cluster, ns)
    annotations = {ko.PODSET_REQUIRED_TOPOLOGY: RACK, ko.PODSET_GROUP_NAME: "job"}
    low = Job(cluster, ns, "low").submit(
        queued_job("low", lq, runs_for="15s", priority="low", annotations=annotations)
    )
    wait_for(
        lambda: any(p["status"].get("phase") == "Running" for p in low.pods("launcher")),
        timeout=TIMEOUT,
        what="the low-priority job's launcher to run",
    )
    high = Job(cluster, ns, "high").submit(
        queued_job("high", lq, runs_for="2s", priority="high", annotations=annotations)
    )
    wait_for(
        lambda: suspended(low), timeout=TIMEOUT, what="Kueue to preempt and suspend the low-priority job"
    )
    high.wait_condition("Succeeded", timeout=TIMEOUT)
    low.wait_condition("Succeeded", timeout=TIMEOUT)
    watched.stop()

    low_workload = watched.workload_conditions("low")
    assert in_order(low_workload, "Admitted", "Preempted", "Requeued", "Admitted", "Finished"), low_workload
    # The low job's pods, in creation order: its first run (made before the preemption) and its second
    # (made after the resume, once the first run's pods were gone).
    low_pods = [e for e in watched.pods.created().values() if e.label(JOB_NAME) == "low"]
    high_pods = [e for e in watched.pods.created().values() if e.label(JOB_NAME) == "high"]
    assert len(low_pods) == 2 * (1 + WORKERS), [e.name for e in low_pods]
    assert len(high_pods) == 1 + WORKERS, [e.name for e in high_pods]
    first, second = low_pods[: 1 + WORKERS], low_pods[1 + WORKERS :]
    assert sorted(e.label(JOB_ROLE) or "" for e in second) == ["launcher", "worker", "worker"]
    # Each run, the high job's included, was gated at creation, ungated by Kueue and placed in one rack;
    # the relaunched launcher pod comes from the launcher Job kept across the suspension, so the gate on
    # it is the one the operator took into that Job's template at the resume.
    for run in (first, high_pods, second):
        nodes = _gated_then_placed_in_one_rack(cluster, watched, run)
        assert len(nodes) > 1, f"all pods of a run on one node: the rack was never needed: {nodes}"
    assert len(watched.launcher_jobs_of("low")) == 1
