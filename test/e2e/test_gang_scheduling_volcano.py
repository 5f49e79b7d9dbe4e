"""Gang scheduling end to end with Volcano: the operator's Volcano PodGroups and the real vc-scheduler
on kwok nodes, sized as in test_gang_scheduling.py so that what fits is exact."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from mpioperator.testing.cluster import LocalCluster
from mpioperator.testing.operator import OperatorProcess
from mpioperator.testing.wait import wait_for
from test.e2e.test_gang_scheduling import (
    BindingLog,
    Gang,
    NodeGroup,
    gang_that_does_not_fit_stays_pending,
    node_group,
    pending_gang_is_bound_whole_when_a_node_is_added,
    pending_gang_runs_when_its_min_resources_are_lowered,
    two_gangs_that_fit_only_one_at_a_time_both_succeed_in_turn,
    waiting_gang_counts_as_without_the_wait_and_survives_a_suspend,
)

PODGROUPS = "/apis/scheduling.volcano.sh/v1beta1"
GROUP_ANNOTATION = "scheduling.k8s.io/group-name"


class VolcanoGang(Gang):
    pod_groups_root = PODGROUPS


@pytest.fixture
def nodes(volcano_cluster: LocalCluster) -> Iterator[NodeGroup]:
    yield from node_group(volcano_cluster)


@pytest.fixture
def ns(volcano_cluster: LocalCluster, make_namespace: Any, volcano_operator: OperatorProcess) -> str:
    name: str = make_namespace(volcano_cluster)
    return name


def refused(gang: Gang, members: int) -> bool:
    """Volcano has judged the gang: its PodGroup says it cannot be scheduled, or every pod was tried."""
    pods = gang.pods()
    tried = len(pods) == members and all(
        any(
            c.get("type") == "PodScheduled" and c.get("status") == "False"
            for c in (p.get("status") or {}).get("conditions") or ()
        )
        for p in pods
    )
    conditions = ((gang.pod_group() or {}).get("status") or {}).get("conditions") or ()
    return tried or any(c.get("type") == "Unschedulable" and c.get("status") == "True" for c in conditions)


def observe_left_pending(gang: Gang, members: int) -> None:
    bindings = BindingLog()

    def judged() -> bool:
        bindings.record(gang.pods())
        return refused(gang, members)

    gang.wait_pod_group()
    wait_for(judged, timeout=60, interval=0.1, what=f"Volcano to refuse the gang of {members}")
    bindings.record(gang.pods())
    assert bindings.bound == {}, f"pods of a gang that does not fit were bound: {bindings.bound}"
    assert gang.condition("Running") is None


def test_volcano_gang_that_does_not_fit_stays_pending_with_no_pod_bound(
    volcano_cluster: LocalCluster, ns: str, nodes: NodeGroup
) -> None:
    for pod in gang_that_does_not_fit_stays_pending(
        volcano_cluster, ns, nodes, VolcanoGang, observe_left_pending
    ):
        assert pod["metadata"]["annotations"][GROUP_ANNOTATION] == "too-big"
        assert pod["spec"]["schedulerName"] == "volcano"


def test_volcano_pending_gang_is_bound_whole_and_succeeds_when_a_node_is_added(
    volcano_cluster: LocalCluster, ns: str, nodes: NodeGroup
) -> None:
    pending_gang_is_bound_whole_when_a_node_is_added(
        volcano_cluster, ns, nodes, VolcanoGang, observe_left_pending
    )


def test_volcano_pending_gang_runs_when_its_min_resources_are_lowered(
    volcano_cluster: LocalCluster, ns: str, nodes: NodeGroup
) -> None:
    pending_gang_runs_when_its_min_resources_are_lowered(
        volcano_cluster, ns, nodes, VolcanoGang, observe_left_pending
    )


def test_volcano_two_gangs_that_fit_only_one_at_a_time_both_succeed_in_turn(
    volcano_cluster: LocalCluster, ns: str, nodes: NodeGroup
) -> None:
    two_gangs_that_fit_only_one_at_a_time_both_succeed_in_turn(volcano_cluster, ns, nodes, VolcanoGang)


def test_volcano_gang_that_waits_for_its_hosts_asks_the_same_and_survives_a_suspend(
    volcano_cluster: LocalCluster, ns: str, nodes: NodeGroup
) -> None:
    waiting_gang_counts_as_without_the_wait_and_survives_a_suspend(volcano_cluster, ns, nodes, VolcanoGang)
