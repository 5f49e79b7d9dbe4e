"""Kubernetes' own gang scheduling (--gang-scheduling=GangScheduling): the Workload and PodGroup it
renders, the pod link, and its selection by the flag."""

from __future__ import annotations

import pytest

from mpioperator.api.objects import Obj
from mpioperator.kube.resources import KUBERNETES_POD_GROUPS, WORKLOADS
from mpioperator.podgroup.factory import new_backend
from mpioperator.podgroup.kubernetes import KubernetesBackend, min_count
from test.unit.podgroup.jobs import OWNER, container, mpijob, replica

BACKEND = KubernetesBackend()


def _job(workers: int = 4, policy: Obj | None = None) -> Obj:
    return mpijob(
        replica(1, container({"cpu": "1"})), replica(workers, container({"cpu": "2"})), policy=policy
    )


def test_the_feature_name_selects_kubernetes_gang_scheduling() -> None:
    backend = new_backend("GangScheduling")
    assert isinstance(backend, KubernetesBackend)
    assert backend.resource == KUBERNETES_POD_GROUPS
    assert backend.name == "GangScheduling"
    # The pods keep their own scheduler: kube-scheduler runs the gang plugin itself.
    assert backend.scheduler_name == ""
    assert not backend.updates_pod_group


def test_pod_group_counts_every_worker_and_the_launcher_and_names_its_workload() -> None:
    group = BACKEND.new_pod_group(_job(workers=4), None)
    assert group == {
        "apiVersion": "scheduling.k8s.io/v1alpha2",
        "kind": "PodGroup",
        "metadata": {"name": "test", "namespace": "default", "ownerReferences": [OWNER]},
        "spec": {
            "podGroupTemplateRef": {"workload": {"workloadName": "test", "podGroupTemplateName": "mpijob"}},
            "schedulingPolicy": {"gang": {"minCount": 5}},
        },
    }


def test_workload_is_owned_by_the_job_and_carries_the_pod_groups_policy() -> None:
    job = _job(workers=4)
    group = BACKEND.new_pod_group(job, None, launcher_in_gang=False)
    needed = BACKEND.prerequisite(job, group)
    assert needed is not None
    res, workload = needed
    assert res == WORKLOADS
    assert workload == {
        "apiVersion": "scheduling.k8s.io/v1alpha2",
        "kind": "Workload",
        "metadata": {"name": "test", "namespace": "default", "ownerReferences": [OWNER]},
        "spec": {
            "controllerRef": {"apiGroup": "kubeflow.org", "kind": "MPIJob", "name": "test"},
            "podGroupTemplates": [{"name": "mpijob", "schedulingPolicy": {"gang": {"minCount": 4}}}],
        },
    }


def test_gang_without_the_launcher_counts_the_workers_only() -> None:
    assert min_count(BACKEND.new_pod_group(_job(workers=3), None, launcher_in_gang=False)) == 3


def test_explicit_min_available_is_the_gangs_count() -> None:
    assert min_count(BACKEND.new_pod_group(_job(workers=4, policy={"minAvailable": 2}), None)) == 2


def test_min_available_zero_asks_for_no_gang() -> None:
    group = BACKEND.new_pod_group(_job(workers=4, policy={"minAvailable": 0}), None)
    assert group["spec"]["schedulingPolicy"] == {"basic": {}}
    assert min_count(group) == 0


def test_pods_are_linked_to_the_group_and_keep_their_scheduler() -> None:
    template: Obj = {"spec": {"schedulerName": "my-scheduler", "containers": []}}
    BACKEND.decorate_pod_template(template, _job())
    assert template["spec"]["schedulingGroup"] == {"podGroupName": "test"}
    assert template["spec"]["schedulerName"] == "my-scheduler"
    assert "metadata" not in template


@pytest.mark.parametrize(
    ("other", "equal"),
    [
        ({"gang": {"minCount": 5}}, True),
        ({"gang": {"minCount": 4}}, False),
        ({"basic": {}}, False),
    ],
)
def test_spec_equality_compares_the_policy(other: Obj, equal: bool) -> None:
    group = BACKEND.new_pod_group(_job(workers=4), None)
    stored = {"spec": dict(group["spec"], schedulingPolicy=other, resourceClaims=None)}
    assert BACKEND.pod_group_spec_equal(group, stored) is equal
