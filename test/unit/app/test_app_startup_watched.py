"""What the start-up check lists: the PodGroup kind and PriorityClasses only with gang scheduling."""

from __future__ import annotations

import pytest

from mpioperator.app.options import parse
from mpioperator.app.startup import pool_size, watched
from mpioperator.kube.resources import (
    MPIJOBS,
    PRIORITY_CLASSES,
    SCHEDULER_PLUGINS_POD_GROUPS,
    VOLCANO_POD_GROUPS,
    Resource,
)


def test_without_gang_scheduling_no_pod_group_kind_nor_priority_classes_are_checked() -> None:
    resources = [res for res, _ in watched(parse([], environ={}))]
    assert MPIJOBS in resources
    assert not {VOLCANO_POD_GROUPS, SCHEDULER_PLUGINS_POD_GROUPS, PRIORITY_CLASSES} & set(resources)


@pytest.mark.parametrize(
    ("flag", "pod_groups"),
    [("volcano", VOLCANO_POD_GROUPS), ("scheduler-plugins-scheduler", SCHEDULER_PLUGINS_POD_GROUPS)],
)
def test_gang_scheduling_checks_its_pod_groups_per_namespace_and_priority_classes_cluster_wide(
    flag: str, pod_groups: Resource
) -> None:
    checks = dict(watched(parse([f"--gang-scheduling={flag}", "--namespace=team-a"], environ={})))
    assert checks[pod_groups] == ("team-a",)
    assert checks[PRIORITY_CLASSES] == (None,)


def test_the_client_has_a_connection_for_every_watch_of_every_served_namespace_and_some_to_spare() -> None:
    namespaces = [f"team-{i}" for i in range(30)]
    options = parse([f"--namespace={','.join(namespaces)}"], environ={})
    watches = sum(len(scopes) for _, scopes in watched(options))
    assert watches == 6 * 30  # MPIJobs, pods, Jobs, ConfigMaps, Secrets, Services in each

    # Each watch holds its connection for its life; the lists and the syncs' writes need more.
    assert pool_size(options) >= watches + options.threadiness * 2
