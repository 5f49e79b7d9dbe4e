"""Gang scheduling end to end: the operator with --gang-scheduling, the real scheduler-plugins scheduler
(Coscheduling) and kwok nodes small enough that what fits is exact.

Every pod asks for 1 cpu and every node has 4, so a launcher with N workers needs N+1 cpus, all at once.
Each test brings its own nodes (a label the jobs select), so other tests' nodes never make room.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from mpioperator.api.objects import Obj
from mpioperator.testing.cluster import LocalCluster
from mpioperator.testing.jobs import Job
from mpioperator.testing.mpijobs import mpijob
from mpioperator.testing.nodes import NodeShape
from mpioperator.testing.operator import OperatorProcess
from mpioperator.testing.wait import ProbeAborted, wait_for

POD_GROUP_LABEL = "scheduling.x-k8s.io/pod-group"
PODGROUPS = "/apis/scheduling.x-k8s.io/v1alpha1"
NODE_GROUP_LABEL = "gang.test.mpioperator.io/node-group"
NODE_CPU = 4
# A rejected gang is retried within the scheduler's shortened leftover flush (components.py: 5 s, checked
# every 30 s), so a gang that can run is running well within this.
TIMEOUT = 150.0


class NodeGroup:
    """kwok nodes of one test, `NODE_CPU` cpus each, selected by the test's jobs through a label."""

    def __init__(self, cluster: LocalCluster) -> None:
        self.cluster = cluster
        self.value = uuid.uuid4().hex[:8]
        self.names: list[str] = []

    def add(self, count: int = 1) -> list[str]:
        shape = NodeShape(cpu=str(NODE_CPU), memory="16Gi", labels={NODE_GROUP_LABEL: self.value})
        added = self.cluster.add_nodes(count, shape, prefix=f"gang-{self.value}")
        self.names.extend(added)
        return added


def node_group(cluster: LocalCluster) -> Iterator[NodeGroup]:
    """A test's own nodes (NodeGroup.add), removed after it."""
    group = NodeGroup(cluster)
    yield group
    if group.names and cluster.layout is not None:
        cluster.remove_nodes(group.names)


@pytest.fixture
def nodes(gang_cluster: LocalCluster) -> Iterator[NodeGroup]:
    yield from node_group(gang_cluster)


@pytest.fixture
def ns(gang_cluster: LocalCluster, make_namespace: Any, gang_operator: OperatorProcess) -> str:
    name: str = make_namespace(gang_cluster)
    return name


def gang_job(
    name: str,
    nodes: NodeGroup,
    *,
    workers: int,
    launcher_runs_for: str = "2s",
    scheduling_policy: Obj | None = None,
) -> Obj:
    """A pi MPIJob whose every pod requests (and is limited to) 1 cpu on this test's nodes."""
    body = mpijob(name, workers=workers, launcher_runs_for=launcher_runs_for)
    for replica in body["spec"]["mpiReplicaSpecs"].values():
        pod = replica["template"]["spec"]
        pod["nodeSelector"] = {NODE_GROUP_LABEL: nodes.value}
        for container in pod["containers"]:
            container["resources"] = {"requests": {"cpu": "1"}, "limits": {"cpu": "1"}}
    if scheduling_policy is not None:
        body["spec"]["runPolicy"]["schedulingPolicy"] = scheduling_policy
    return body


class Gang(Job):
    """One MPIJob, its PodGroup and its pods, read through the admin REST client."""

    pod_groups_root = PODGROUPS  # the API group of the backend's PodGroups

    def pod_group(self) -> Obj | None:
        return self.cluster.rest.get_or_none(
            f"{self.pod_groups_root}/namespaces/{self.ns}/podgroups/{self.name}"
        )

    def wait_pod_group(self) -> Obj:
        found = wait_for(self.pod_group, timeout=60, what=f"PodGroup {self.ns}/{self.name}")
        assert found is not None
        return found

    def pods(self, role: str | None = None) -> list[Obj]:
        """The job's pods, those being deleted too: a gang counts every pod the scheduler still sees."""
        selector = f"training.kubeflow.org/job-name={self.name}"
        if role:
            selector += f",training.kubeflow.org/job-role={role}"
        items: list[Obj] = self.cluster.rest.get(
            f"/api/v1/namespaces/{self.ns}/pods?labelSelector={selector}"
        )["items"]
        return items


def is_launcher(pod: Obj) -> bool:
    return bool(pod["metadata"]["labels"].get("training.kubeflow.org/job-role") == "launcher")


def attempted_and_unschedulable(pod: Obj) -> bool:
    """The scheduler has tried this pod and left it unbound (PodScheduled=False, Unschedulable)."""
    return any(
        c.get("type") == "PodScheduled" and c.get("status") == "False" and c.get("reason") == "Unschedulable"
        for c in (pod.get("status") or {}).get("conditions") or ()
    )


def holds_node(pod: Obj) -> bool:
    """Bound and neither finished nor being deleted: the pod occupies its node's cpu."""
    return bool(
        pod["spec"].get("nodeName")
        and (pod.get("status") or {}).get("phase") not in ("Succeeded", "Failed")
        and not pod["metadata"].get("deletionTimestamp")
    )


class BindingLog:
    """Every binding seen while polling. A pod's nodeName never changes once set and these pods are not
    deleted while they are watched, so a binding cannot slip between two polls unseen."""

    def __init__(self) -> None:
        self.bound: dict[str, str] = {}

    def record(self, pods: list[Obj]) -> list[Obj]:
        for pod in pods:
            if pod["spec"].get("nodeName"):
                self.bound.setdefault(pod["metadata"]["name"], pod["spec"]["nodeName"])
        return pods


class GangViolation(ProbeAborted, AssertionError):
    """Seen while waiting: what must never happen did; waiting longer cannot undo it."""


def observe_gang_left_pending(gang: Gang, members: int) -> None:
    """Watch `gang` from its submission until the scheduler has tried and rejected every one of its pods:
    during that whole window its PodGroup exists and not a single pod is bound to a node."""
    bindings = BindingLog()

    def all_rejected() -> bool:
        pods = bindings.record(gang.pods())
        if bindings.bound:
            raise GangViolation(f"pods of a gang that does not fit were bound: {bindings.bound}")
        if gang.pod_group() is None:
            raise GangViolation("the PodGroup disappeared while its pods were pending")
        return len(pods) == members and all(attempted_and_unschedulable(p) for p in pods)

    gang.wait_pod_group()
    wait_for(all_rejected, timeout=60, interval=0.1, what=f"the scheduler to try all {members} pods")
    # One last look, after the scheduler's verdict on every member.
    bindings.record(gang.pods())
    assert bindings.bound == {}, f"pods of a gang that does not fit were bound: {bindings.bound}"
    assert gang.get() is not None and gang.condition("Running") is None


def wait_succeeded_recording_bindings(gang: Gang, bindings: BindingLog) -> None:
    def succeeded() -> bool:
        bindings.record(gang.pods())
        return gang.condition("Succeeded") is not None

    wait_for(succeeded, timeout=TIMEOUT, interval=0.2, what=f"{gang.name} Succeeded")


PendingObserver = Callable[[Gang, int], None]


def gang_that_does_not_fit_stays_pending(
    cluster: LocalCluster, ns: str, nodes: NodeGroup, gang_type: type[Gang], left_pending: PendingObserver
) -> list[Obj]:
    """The pods of a gang of 5 on one 4-cpu node, after the scheduler refused them all; none bound."""
    # 4 cpus, 5 pods of 1 cpu: one at a time, 4 of them would be bound; as a gang, none may be.
    nodes.add(1)
    gang = gang_type(cluster, ns, "too-big").submit(gang_job("too-big", nodes, workers=4))
    pod_group = gang.wait_pod_group()
    assert pod_group["spec"]["minMember"] == 5
    left_pending(gang, 5)
    return gang.pods()


def pending_gang_is_bound_whole_when_a_node_is_added(
    cluster: LocalCluster, ns: str, nodes: NodeGroup, gang_type: type[Gang], left_pending: PendingObserver
) -> None:
    (first,) = nodes.add(1)
    gang = gang_type(cluster, ns, "waits").submit(gang_job("waits", nodes, workers=4))
    left_pending(gang, 5)
    members = {p["metadata"]["name"] for p in gang.pods()}

    (second,) = nodes.add(1)
    bindings = BindingLog()
    wait_succeeded_recording_bindings(gang, bindings)
    assert set(bindings.bound) == members
    # 5 cpus of pods only fit on both 4-cpu nodes together.
    assert set(bindings.bound.values()) == {first, second}


def _left_pending(gang: Gang, members: int) -> None:
    observe_gang_left_pending(gang, members=members)


def test_gang_that_does_not_fit_stays_pending_with_no_pod_bound(
    gang_cluster: LocalCluster, ns: str, nodes: NodeGroup
) -> None:
    for pod in gang_that_does_not_fit_stays_pending(gang_cluster, ns, nodes, Gang, _left_pending):
        assert pod["metadata"]["labels"][POD_GROUP_LABEL] == "too-big"
        assert pod["spec"]["schedulerName"] == gang_cluster.gang_scheduler_name


def test_pending_gang_is_bound_whole_and_succeeds_when_a_node_is_added(
    gang_cluster: LocalCluster, ns: str, nodes: NodeGroup
) -> None:
    pending_gang_is_bound_whole_when_a_node_is_added(gang_cluster, ns, nodes, Gang, _left_pending)


def pending_gang_runs_when_its_min_resources_are_lowered(
    cluster: LocalCluster, ns: str, nodes: NodeGroup, gang_type: type[Gang], left_pending: PendingObserver
) -> None:
    # The 3 pods fit the node, but the gang claims it needs more than the cluster has.
    nodes.add(1)
    gang = gang_type(cluster, ns, "modest").submit(
        gang_job("modest", nodes, workers=2, scheduling_policy={"minResources": {"cpu": "8"}})
    )
    left_pending(gang, 3)

    gang.patch({"spec": {"runPolicy": {"schedulingPolicy": {"minResources": {"cpu": "3"}}}}})
    wait_for(
        lambda: ((gang.pod_group() or {}).get("spec") or {}).get("minResources", {}).get("cpu"),
        timeout=60,
        what="the PodGroup's minResources to follow the MPIJob",
        done=lambda cpu: str(cpu) == "3",
    )
    bindings = BindingLog()
    wait_succeeded_recording_bindings(gang, bindings)
    assert len(bindings.bound) == 3


def two_gangs_that_fit_only_one_at_a_time_both_succeed_in_turn(
    cluster: LocalCluster, ns: str, nodes: NodeGroup, gang_type: type[Gang]
) -> None:
    # Each gang needs 3 of the node's 4 cpus: either fits alone, both together do not. Scheduled pod by
    # pod they could split the node between them; as gangs one runs, then the other.
    nodes.add(1)
    gangs = [
        gang_type(cluster, ns, name).submit(gang_job(name, nodes, workers=2, launcher_runs_for="3s"))
        for name in ("first", "second")
    ]
    launchers_seen_running: set[str] = set()
    bindings = {gang.name: BindingLog() for gang in gangs}

    def both_succeeded() -> bool:
        # One list call: a consistent snapshot of both gangs' pods.
        pods: list[Obj] = cluster.rest.get(f"/api/v1/namespaces/{ns}/pods")["items"]
        running_launchers = set()
        for pod in pods:
            job = pod["metadata"]["labels"].get("training.kubeflow.org/job-name", "")
            if job in bindings:
                bindings[job].record([pod])
            if is_launcher(pod) and holds_node(pod):
                running_launchers.add(job)
        launchers_seen_running.update(running_launchers)
        if len(running_launchers) > 1:
            raise GangViolation(f"both launchers held the node at once: {sorted(running_launchers)}")
        return all(gang.condition("Succeeded") is not None for gang in gangs)

    wait_for(both_succeeded, timeout=2 * TIMEOUT, interval=0.1, what="both gangs Succeeded")
    assert launchers_seen_running == {"first", "second"}
    for gang in gangs:
        assert len(bindings[gang.name].bound) == 3, bindings[gang.name].bound


def test_pending_gang_runs_when_its_min_resources_are_lowered(
    gang_cluster: LocalCluster, ns: str, nodes: NodeGroup
) -> None:
    pending_gang_runs_when_its_min_resources_are_lowered(gang_cluster, ns, nodes, Gang, _left_pending)


def test_two_gangs_that_fit_only_one_at_a_time_both_succeed_in_turn(
    gang_cluster: LocalCluster, ns: str, nodes: NodeGroup
) -> None:
    two_gangs_that_fit_only_one_at_a_time_both_succeed_in_turn(gang_cluster, ns, nodes, Gang)


def waiting_gang_counts_as_without_the_wait_and_survives_a_suspend(
    cluster: LocalCluster, ns: str, nodes: NodeGroup, gang_type: type[Gang]
) -> None:
    """A job with `mpioperator.io/wait-for-ssh-port`: its PodGroup asks what the same job's does without
    it (the waiter takes the launcher's own cpu), it runs, and it runs again after a suspend and resume."""
    nodes.add(1)

    def asks(found: Obj) -> tuple[object, object]:
        return found["spec"]["minMember"], found["spec"].get("minResources")

    # The same job without the annotation, on nodes that do not exist: its PodGroup is only read, then
    # deleted with it, since a waiting gang holds a share of the queue (Volcano's enqueue step).
    plain = gang_type(cluster, ns, "plain").submit(gang_job("plain", NodeGroup(cluster), workers=2))
    expected = asks(plain.wait_pod_group())
    cluster.rest.delete(plain.path)
    wait_for(lambda: plain.pod_group() is None, timeout=TIMEOUT, what="the plain job's PodGroup gone")

    body = gang_job("waits", nodes, workers=2, launcher_runs_for="20s")
    body["metadata"].setdefault("annotations", {})["mpioperator.io/wait-for-ssh-port"] = "2222"
    gang = gang_type(cluster, ns, "waits").submit(body)
    assert asks(gang.wait_pod_group()) == expected
    wait_for(lambda: gang.condition("Running"), timeout=TIMEOUT, what="the waiting gang Running")
    launcher = next(p for p in gang.pods() if is_launcher(p))
    inits = [c["name"] for c in launcher["spec"].get("initContainers") or ()]
    assert inits == ["mpioperator-wait-for-hosts"]

    gang.patch({"spec": {"runPolicy": {"suspend": True}}})
    wait_for(lambda: gang.condition("Suspended"), timeout=TIMEOUT, what="the gang Suspended")
    wait_for(lambda: not gang.pods(), timeout=TIMEOUT, what="the suspended gang's pods gone")

    gang.patch({"spec": {"runPolicy": {"suspend": False}}})
    wait_for(lambda: gang.condition("Succeeded"), timeout=2 * TIMEOUT, what="the resumed gang Succeeded")
    assert asks(gang.wait_pod_group()) == expected


def test_a_gang_that_waits_for_its_hosts_asks_the_same_and_survives_a_suspend(
    gang_cluster: LocalCluster, ns: str, nodes: NodeGroup
) -> None:
    waiting_gang_counts_as_without_the_wait_and_survives_a_suspend(gang_cluster, ns, nodes, Gang)
