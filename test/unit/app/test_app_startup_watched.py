"""What the start-up check lists: the PodGroup kind and PriorityClasses only with gang scheduling."""

from __future__ import annotations

import pytest

from mpioperator.app.options import parse
from mpioperator.app.startup import watched
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
