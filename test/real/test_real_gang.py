"""Gang scheduling on two real nodes with real CPU requests (docs/development.md, "More than one real node";
docs/install.md, "Gang scheduling").

Every pod of these jobs requests half the smaller node's allocatable CPU, so each node holds two of them
and the cluster four: a pi job of a launcher and two workers fits, a second beside it does not. Pod by pod,
one of the second job's workers would take the place the first leaves; as a gang, none may. The first job's
launcher waits for the test's word before it runs mpirun, so the second job is watched for as long as
needed while the first holds the nodes, and no timing decides the outcome.

The module's cluster (conftest.two_real_nodes) runs both gang backends the operator offers: the
scheduler-plugins scheduler (Coscheduling) beside kube-scheduler, and kube-scheduler's own GangScheduling
plugin with the Workload API. Each test starts its own operator with that backend's `--gang-scheduling`,
since the flag applies to every job of an operator.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from mpioperator.api import constants as api
from mpioperator.api.objects import Obj
from mpioperator.podgroup.quantity import Quantity
from mpioperator.testing.cluster import LocalCluster
from mpioperator.testing.mpijobs import PI_IMAGES
from mpioperator.testing.node.realnode import RealNode
from mpioperator.testing.operator import OperatorProcess
from mpioperator.testing.wait import WaitTimeout, wait_for
from test.e2e.test_gang_scheduling import Gang, GangViolation, attempted_and_unschedulable, holds_node
from test.e2e.test_gang_scheduling_kubernetes import WorkloadGang
from test.real.conftest import namespace_on_ready_nodes, running_operator, two_real_nodes
from test.real.test_real_mpijobs import assert_computed_pi, diagnosis, launcher_log, pi_job

IMAGE = PI_IMAGES["OpenMPI"]
# The first job's launcher runs mpirun once this file exists (the test creates it with kubectl exec).
GO_FILE = "/tmp/go"
WORKERS = 2
TIMEOUT = 180.0


@pytest.fixture(scope="module")
def gang_nodes() -> Iterator[LocalCluster]:
    with two_real_nodes(node_images=[IMAGE], scheduler_plugins=True, workload_gang=True) as cluster:
        yield cluster


def nodes_of(cluster: LocalCluster) -> list[RealNode]:
    assert cluster.real_nodes is not None
    return cluster.real_nodes.nodes


def pods_taking_room(cluster: LocalCluster) -> list[str]:
    """Every pod the scheduler counts on a node: bound and not finished, those being deleted too (their
    requests are freed only once they are gone)."""
    pods: list[Obj] = cluster.rest.get("/api/v1/pods")["items"]
    return sorted(
        f"{p['metadata']['namespace']}/{p['metadata']['name']}"
        for p in pods
        if p["spec"].get("nodeName") and (p.get("status") or {}).get("phase") not in ("Succeeded", "Failed")
    )


@pytest.fixture
def ns(gang_nodes: LocalCluster, make_namespace: Any) -> str:
    # Every test starts with room for exactly four pods: nothing of the test before (its namespace is
    # deleted in the background) may still hold a place.
    return namespace_on_ready_nodes(gang_nodes, make_namespace, lambda: not pods_taking_room(gang_nodes))


def pod_cpu(cluster: LocalCluster) -> str:
    """Half the smaller node's allocatable CPU, in millicores: two such pods fill a node, a third does not
    fit (so the sizes follow whatever the kubelets report on this machine)."""
    allocatable = [
        Quantity.parse(cluster.rest.get(f"/api/v1/nodes/{node.name}")["status"]["allocatable"]["cpu"])
        for node in nodes_of(cluster)
    ]
    millis = min(q.nanos for q in allocatable) // 1_000_000
    assert millis >= 2, f"nodes too small to size pods by: {allocatable}"
    return f"{millis // 2}m"


def gang_pi_job(name: str, cpu: str, *, gated: bool) -> Obj:
    """A pi job of a launcher and two workers, each pod requesting `cpu` (and no CPU limit: the request
    decides the placement, the job may use what the machine has). A `gated` launcher runs mpirun only once
    GO_FILE exists."""
    body = pi_job(name, workers=WORKERS, ranks=WORKERS)
    for replica in body["spec"]["mpiReplicaSpecs"].values():
        for container in replica["template"]["spec"]["containers"]:
            container["resources"] = {
                "requests": {"cpu": cpu, "memory": "64Mi"},
                "limits": {"memory": "512Mi"},
            }
    if gated:
        launcher = body["spec"]["mpiReplicaSpecs"]["Launcher"]["template"]["spec"]["containers"][0]
        mpirun = " ".join(launcher["args"])
        launcher["args"] = ["sh", "-c", f"until [ -e {GO_FILE} ]; do sleep 0.5; done; exec {mpirun}"]
    return body


@dataclass
class Watch:
    """Every look at both jobs' pods, from one list call each (a consistent snapshot of both)."""

    cluster: LocalCluster
    ns: str
    started: float = field(default_factory=time.monotonic)
    timeline: list[str] = field(default_factory=list)
    # The second job's pods seen while the first held its places: (nodeName, phase) per look.
    second_while_first_held: list[dict[str, tuple[str, str]]] = field(default_factory=list)
    bound: dict[str, dict[str, str]] = field(default_factory=lambda: {"first": {}, "second": {}})

    def mark(self, what: str) -> None:
        line = f"+{time.monotonic() - self.started:6.1f} s  {what}"
        self.timeline.append(line)
        print(line, flush=True)

    def look(self) -> dict[str, list[Obj]]:
        pods: list[Obj] = self.cluster.rest.get(f"/api/v1/namespaces/{self.ns}/pods")["items"]
        by_job: dict[str, list[Obj]] = {"first": [], "second": []}
        for pod in pods:
            job = pod["metadata"]["labels"].get(api.LABEL_JOB_NAME, "")
            if job in by_job:
                by_job[job].append(pod)
                if pod["spec"].get("nodeName"):
                    self.bound[job].setdefault(pod["metadata"]["name"], pod["spec"]["nodeName"])
        # Only while the first job holds all three of its places: once one of them is being freed (its
        # workers deleted as its launcher ends), the scheduler may place the second job whole in the room
        # left, while the launcher's pod still shows Running for a moment.
        if first_holds_its_places(by_job["first"]) and by_job["second"]:
            seen = {
                p["metadata"]["name"]: (
                    p["spec"].get("nodeName") or "",
                    (p.get("status") or {}).get("phase", ""),
                )
                for p in by_job["second"]
            }
            self.second_while_first_held.append(seen)
            partial = {name: node for name, (node, _) in seen.items() if node}
            if partial:
                raise GangViolation(
                    f"the second job was bound in part while the first held the nodes: {partial}"
                )
        return by_job

    def wide(self) -> str:
        return self.cluster.kubectl("-n", self.ns, "get", "pods", "-o", "wide").stdout


def first_holds_its_places(pods: list[Obj]) -> bool:
    """The first job's launcher and both workers bound, running and not going."""
    return len(pods) == WORKERS + 1 and all(
        holds_node(p) and (p.get("status") or {}).get("phase") == "Running" for p in pods
    )


def scheduling_verdicts(pods: list[Obj]) -> list[str]:
    lines = []
    for pod in pods:
        for cond in (pod.get("status") or {}).get("conditions") or ():
            if cond.get("type") == "PodScheduled":
                lines.append(f"{pod['metadata']['name']}: {cond.get('reason')}: {cond.get('message')}")
    return lines


def finished(gang: Gang, watch: Watch, operator: OperatorProcess) -> Obj:
    def outcome() -> Obj | None:
        watch.look()
        return gang.condition("Succeeded") or gang.condition("Failed")

    try:
        found = wait_for(
            outcome,
            timeout=TIMEOUT,
            interval=0.2,
            what=f"{gang.name} to finish",
        )
    except WaitTimeout as late:
        raise AssertionError(f"{late}\n{diagnosis(gang)}\noperator:\n{operator.log_tail(60)}") from None
    assert found is not None
    return dict(found)


def second_job_waits_whole_while_the_first_runs_then_both_succeed(
    cluster: LocalCluster, ns: str, operator: OperatorProcess, gang_type: type[Gang]
) -> None:
    cpu = pod_cpu(cluster)
    watch = Watch(cluster, ns)
    watch.mark(f"each pod requests {cpu} cpu; nodes {[n.name for n in nodes_of(cluster)]}")
    first = gang_type(cluster, ns, "first").submit(gang_pi_job("first", cpu, gated=True))
    try:
        wait_for(
            lambda: first_holds_its_places(watch.look()["first"]),
            timeout=TIMEOUT,
            interval=0.2,
            what="the first job's three pods running",
        )
    except WaitTimeout as late:
        raise AssertionError(f"{late}\n{diagnosis(first)}\noperator:\n{operator.log_tail(60)}") from None
    watch.mark(f"first job running: {watch.bound['first']}")
    # The first job's three pods are all that take room: one place is left, which a scheduler placing pod
    # by pod would give to one of the second job's workers.
    assert pods_taking_room(cluster) == sorted(f"{ns}/{name}" for name in watch.bound["first"])

    second = gang_type(cluster, ns, "second").submit(gang_pi_job("second", cpu, gated=False))
    watch.mark("second job submitted")
    assert second.wait_pod_group() is not None

    def second_tried() -> bool:
        # Coscheduling rejects every member at once; kube-scheduler's gang plugin may hold some of them
        # back unattempted (reserved, never bound) while it tries the others.
        pods = watch.look()["second"]
        return len(pods) == WORKERS and any(attempted_and_unschedulable(p) for p in pods)

    wait_for(
        second_tried, timeout=TIMEOUT, interval=0.2, what="the scheduler to try both of the second's workers"
    )
    waiting = watch.look()
    watch.mark("the scheduler tried the second job's workers and left them unbound")
    print(watch.wide())
    print("\n".join(scheduling_verdicts(waiting["second"])))
    assert first_holds_its_places(waiting["first"]), "the first job stopped before the second was tried"

    launcher = next(
        p for p in waiting["first"] if p["metadata"]["labels"].get(api.LABEL_JOB_ROLE) == api.ROLE_LAUNCHER
    )
    cluster.kubectl("-n", ns, "exec", launcher["metadata"]["name"], "--", "touch", GO_FILE)
    watch.mark("first job's mpirun released")

    first_done = finished(first, watch, operator)
    watch.mark(f"first job finished: {first_done['type']}")
    second_done = finished(second, watch, operator)
    watch.mark(f"second job finished: {second_done['type']}; its pods bound {watch.bound['second']}")
    print(watch.wide())

    looks = watch.second_while_first_held
    states = sorted({state for look in looks for state in look.values()})
    print(
        f"{len(looks)} looks at the second job's pods while the first held the nodes; (nodeName, phase) seen: {states}"
    )
    assert first_done["type"] == "Succeeded", f"{first_done}\n{diagnosis(first)}"
    assert second_done["type"] == "Succeeded", f"{second_done}\n{diagnosis(second)}"
    assert looks and states == [("", "Pending")], states
    assert len(watch.bound["second"]) == WORKERS + 1, watch.bound
    for name in ("first", "second"):
        assert_computed_pi(launcher_log(cluster, ns, name), ranks=WORKERS)


def test_with_coscheduling_a_second_job_that_does_not_fit_waits_with_no_pod_bound_then_runs_when_the_first_ends(
    gang_nodes: LocalCluster, ns: str, tmp_path: Path
) -> None:
    flag = f"--gang-scheduling={gang_nodes.gang_scheduler_name}"
    with running_operator(gang_nodes, tmp_path, flag) as operator:
        second_job_waits_whole_while_the_first_runs_then_both_succeed(gang_nodes, ns, operator, Gang)


def test_with_kubernetes_gang_scheduling_a_second_job_that_does_not_fit_waits_with_no_pod_bound_then_runs(
    gang_nodes: LocalCluster, ns: str, tmp_path: Path
) -> None:
    with running_operator(gang_nodes, tmp_path, "--gang-scheduling=GangScheduling") as operator:
        second_job_waits_whole_while_the_first_runs_then_both_succeed(gang_nodes, ns, operator, WorkloadGang)
