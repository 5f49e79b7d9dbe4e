"""Kubernetes' own gang scheduling end to end: the operator with --gang-scheduling=GangScheduling makes
each job's Workload and PodGroup, and kube-scheduler's GangScheduling plugin (feature gates on, no
second scheduler) places the gang on kwok nodes sized as in test_gang_scheduling.py."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from mpioperator.api.objects import Obj
from mpioperator.testing.cluster import LocalCluster
from mpioperator.testing.operator import OperatorProcess
from mpioperator.testing.wait import wait_for
from test.e2e.test_gang_scheduling import (
    TIMEOUT,
    BindingLog,
    Gang,
    GangViolation,
    NodeGroup,
    attempted_and_unschedulable,
    gang_job,
    holds_node,
    node_group,
)

ROOT = "/apis/scheduling.k8s.io/v1alpha2"
JOB_NAME_LABEL = "training.kubeflow.org/job-name"


class WorkloadGang(Gang):
    pod_groups_root = ROOT


@pytest.fixture
def nodes(workload_gang_cluster: LocalCluster) -> Iterator[NodeGroup]:
    yield from node_group(workload_gang_cluster)


@pytest.fixture
def ns(
    workload_gang_cluster: LocalCluster, make_namespace: Any, workload_gang_operator: OperatorProcess
) -> str:
    name: str = make_namespace(workload_gang_cluster)
    return name


def test_of_two_gangs_that_fit_one_at_a_time_one_runs_whole_and_the_other_waits_with_no_pod_bound(
    workload_gang_cluster: LocalCluster, ns: str, nodes: NodeGroup
) -> None:
    cluster = workload_gang_cluster
    # 8 cpus; each gang is a launcher and 4 workers of 1 cpu, 5 cpus. Pod by pod, the second gang would
    # take the 3 cpus the first leaves; as a gang it takes none of them.
    nodes.add(2)
    gangs = {
        name: WorkloadGang(cluster, ns, name).submit(
            gang_job(name, nodes, workers=4, launcher_runs_for="15s")
        )
        for name in ("first", "second")
    }
    for gang in gangs.values():
        assert (gang.wait_pod_group()["spec"]["schedulingPolicy"]) == {"gang": {"minCount": 5}}
    bindings = {name: BindingLog() for name in gangs}

    def pods_by_job() -> dict[str, list[Obj]]:
        # One list call: a consistent snapshot of both gangs' pods.
        pods: list[Obj] = cluster.rest.get(f"/api/v1/namespaces/{ns}/pods")["items"]
        out: dict[str, list[Obj]] = {name: [] for name in gangs}
        for pod in pods:
            job = pod["metadata"]["labels"].get(JOB_NAME_LABEL, "")
            if job in out:
                out[job].append(pod)
                bindings[job].record([pod])
        return out

    def one_whole_the_other_waiting() -> tuple[str, str] | None:
        pods = pods_by_job()
        holding = {n: [p["metadata"]["name"] for p in pods[n] if holds_node(p)] for n in gangs}
        if all(holding.values()):
            raise GangViolation(f"both gangs hold nodes at once on a cluster that fits one: {holding}")
        running = [n for n in gangs if len(pods[n]) == 5 and len(holding[n]) == 5]
        if not running:
            return None
        (winner,) = running
        (loser,) = (n for n in gangs if n != winner)
        waiting = pods[loser]
        if len(waiting) != 5 or not any(attempted_and_unschedulable(p) for p in waiting):
            return None
        return winner, loser

    outcome = wait_for(
        one_whole_the_other_waiting, timeout=TIMEOUT, interval=0.2, what="one gang whole, one tried"
    )
    assert outcome is not None
    winner, loser = outcome
    print(cluster.kubectl("get", "pods", "-o", "wide", "-n", ns).stdout)
    assert bindings[loser].bound == {}, f"the waiting gang was bound piecemeal: {bindings[loser].bound}"
    for pod in pods_by_job()[loser]:
        # kube-scheduler's verdict on each waiting member, shown with -rP.
        for cond in (pod.get("status") or {}).get("conditions") or ():
            if cond.get("type") == "PodScheduled":
                print(pod["metadata"]["name"], cond.get("reason"), cond.get("message"))
        assert pod["spec"]["schedulingGroup"] == {"podGroupName": loser}
        assert pod["spec"]["schedulerName"] == "default-scheduler"

    def winner_done_loser_unbound() -> bool:
        pods = pods_by_job()
        if bindings[loser].bound and any(holds_node(p) for p in pods[winner]):
            raise GangViolation(f"{loser} was bound while {winner} held the nodes: {bindings[loser].bound}")
        return gangs[winner].condition("Succeeded") is not None

    wait_for(winner_done_loser_unbound, timeout=TIMEOUT, interval=0.2, what=f"{winner} Succeeded")

    def loser_succeeded() -> bool:
        pods_by_job()
        return gangs[loser].condition("Succeeded") is not None

    wait_for(loser_succeeded, timeout=TIMEOUT, interval=0.2, what=f"{loser} Succeeded after {winner}")
    print(cluster.kubectl("get", "pods", "-o", "wide", "-n", ns).stdout)
    for gang in gangs.values():
        assert len(bindings[gang.name].bound) == 5, bindings[gang.name].bound
