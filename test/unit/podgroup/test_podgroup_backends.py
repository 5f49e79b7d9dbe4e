"""Rendered PodGroups and pod decoration for both backends: upstream's TestNewPodGroup and
TestDecoratePodTemplateSpec, plus backend selection and spec equality."""

from __future__ import annotations

import copy
from typing import Any

import pytest
import structlog

from mpioperator.api.objects import Obj
from mpioperator.kube.resources import SCHEDULER_PLUGINS_POD_GROUPS, VOLCANO_POD_GROUPS
from mpioperator.podgroup.backend import PodGroupBackend, decorator_for
from mpioperator.podgroup.factory import new_backend
from mpioperator.podgroup.null import NullBackend
from mpioperator.podgroup.resources import effective_pod_requests
from mpioperator.podgroup.scheduler_plugins import SchedulerPluginsBackend
from mpioperator.podgroup.volcano import VolcanoBackend
from test.unit.podgroup.jobs import OWNER, container, mpijob, priorities, replica

METADATA = {"name": "test", "namespace": "default", "ownerReferences": [OWNER]}
VOLCANO = VolcanoBackend()
PLUGINS = SchedulerPluginsBackend("default-scheduler")


def _job_with_every_policy_field() -> Obj:
    return mpijob(
        replica(1, container({"cpu": "1", "memory": "2Gi"}), priority_class="high"),
        replica(2, container({"cpu": "10", "memory": "20Gi"})),
        policy={
            "minAvailable": 2,
            "queue": "project-y",
            "priorityClass": "high",
            "minResources": {"cpu": "1", "memory": "2Gi"},
            "scheduleTimeoutSeconds": 100,
        },
        annotations={"scheduling.volcano.sh/queue-name": "project-x"},
    )


def _job_without_policy() -> Obj:
    return mpijob(
        replica(1, container({"cpu": "1", "memory": "2Gi"}), priority_class="high"),
        replica(2, container({"cpu": "10", "memory": "20Gi"})),
        annotations={"scheduling.volcano.sh/queue-name": "project-x"},
    )


def _launcher_only_job() -> Obj:
    job = mpijob(replica(1, container({"cpu": "1", "memory": "2Gi"})), policy={"minAvailable": 1})
    job["spec"]["runLauncherAsWorker"] = True
    return job


# TestNewPodGroup


def test_volcano_pod_group_all_scheduling_policy_fields_are_set() -> None:
    assert VOLCANO.new_pod_group(_job_with_every_policy_field(), priorities()) == {
        "apiVersion": "scheduling.volcano.sh/v1beta1",
        "kind": "PodGroup",
        "metadata": METADATA,
        "spec": {
            "minMember": 2,
            "queue": "project-y",
            "priorityClassName": "high",
            "minResources": {"cpu": "1", "memory": "2Gi"},
        },
    }


def test_scheduler_plugins_pod_group_all_scheduling_policy_fields_are_set() -> None:
    assert PLUGINS.new_pod_group(_job_with_every_policy_field(), priorities()) == {
        "apiVersion": "scheduling.x-k8s.io/v1alpha1",
        "kind": "PodGroup",
        "metadata": METADATA,
        "spec": {
            "minMember": 2,
            "minResources": {"cpu": "1", "memory": "2Gi"},
            "scheduleTimeoutSeconds": 100,
        },
    }


def test_volcano_pod_group_scheduling_policy_is_nil() -> None:
    # The launcher's class "high" names the group but does not exist, so it weighs 0.
    assert VOLCANO.new_pod_group(_job_without_policy(), priorities())["spec"] == {
        "minMember": 3,
        "queue": "project-x",
        "priorityClassName": "high",
        "minResources": {"cpu": "21", "memory": "42Gi"},
    }


def test_scheduler_plugins_pod_group_scheduling_policy_is_nil_sends_a_zero_timeout() -> None:
    assert PLUGINS.new_pod_group(_job_without_policy(), priorities())["spec"] == {
        "minMember": 3,
        "minResources": {"cpu": "21", "memory": "42Gi"},
        "scheduleTimeoutSeconds": 0,
    }


@pytest.mark.parametrize("backend", [VOLCANO, PLUGINS], ids=["volcano", "scheduler-plugins"])
def test_pod_group_no_worker_no_min_resources_is_the_launchers_requests(backend: PodGroupBackend) -> None:
    spec = backend.new_pod_group(_launcher_only_job(), priorities())["spec"]
    assert spec["minMember"] == 1
    assert spec["minResources"] == {"cpu": "1", "memory": "2Gi"}


def test_verbatim_min_resources_are_sent_in_canonical_form() -> None:
    job = _job_with_every_policy_field()
    job["spec"]["runPolicy"]["schedulingPolicy"]["minResources"] = {"cpu": "1.5", "memory": "1.5Gi"}
    assert VOLCANO.new_pod_group(job, None)["spec"]["minResources"] == {"cpu": "1500m", "memory": "1536Mi"}


def test_volcano_omits_empty_queue_and_priority_class() -> None:
    job = mpijob(replica(1, container({"cpu": "1"})), replica(1, container({"cpu": "1"})))
    assert VOLCANO.new_pod_group(job, None)["spec"] == {"minMember": 2, "minResources": {"cpu": "2"}}


def test_empty_gang_has_no_min_member_nor_min_resources() -> None:
    job = mpijob(
        replica(1, container({"cpu": "1"})), replica(1, container({"cpu": "1"})), policy={"minAvailable": 0}
    )
    assert VOLCANO.new_pod_group(job, None)["spec"] == {}
    assert PLUGINS.new_pod_group(job, None)["spec"] == {"scheduleTimeoutSeconds": 0}


def test_volcano_sends_an_empty_computed_min_resources_but_scheduler_plugins_omits_it() -> None:
    job = mpijob(replica(1, container()), replica(1, container()))
    assert VOLCANO.new_pod_group(job, None)["spec"]["minResources"] == {}
    assert "minResources" not in PLUGINS.new_pod_group(job, None)["spec"]


def test_existing_priority_classes_reach_the_truncation() -> None:
    job = mpijob(
        replica(1, container({"cpu": "2", "memory": "4Gi"}), priority_class="high"),
        replica(2, container({"cpu": "20", "memory": "64Gi"}), priority_class="low"),
        policy={"minAvailable": 2},
    )
    spec = PLUGINS.new_pod_group(job, priorities(high=100010, low=10010))["spec"]
    assert spec["minResources"] == {"cpu": "22", "memory": "68Gi"}


def test_backend_can_count_effective_pod_requests_when_asked() -> None:
    worker = replica(2, container({"cpu": "1"}))
    worker["template"]["spec"]["initContainers"] = [container({"cpu": "4"}, name="init")]
    job = mpijob(replica(1, container({"cpu": "1"})), worker)
    assert VOLCANO.new_pod_group(job, None)["spec"]["minResources"] == {"cpu": "3"}
    improved = VolcanoBackend(pod_requests=effective_pod_requests)
    assert improved.new_pod_group(job, None)["spec"]["minResources"] == {"cpu": "9"}


# TestDecoratePodTemplateSpec


def test_volcano_decoration_sets_scheduler_name_and_group_annotation() -> None:
    template: Obj = {"metadata": {"annotations": {"keep": "me"}}, "spec": {"schedulerName": "other"}}
    VOLCANO.decorate_pod_template(template, _job_without_policy())
    assert template == {
        "metadata": {"annotations": {"keep": "me", "scheduling.k8s.io/group-name": "test"}},
        "spec": {"schedulerName": "volcano"},
    }


def test_scheduler_plugins_decoration_sets_configured_scheduler_and_group_label() -> None:
    template: Obj = {"spec": {"containers": []}}
    SchedulerPluginsBackend("scheduler-plugins-scheduler").decorate_pod_template(
        template, _job_without_policy()
    )
    assert template == {
        "metadata": {"labels": {"scheduling.x-k8s.io/pod-group": "test"}},
        "spec": {"containers": [], "schedulerName": "scheduler-plugins-scheduler"},
    }


@pytest.mark.parametrize(
    ("current", "warned"), [(None, True), ("", True), ("other", True), ("volcano", False)]
)
def test_decoration_warns_whenever_the_scheduler_name_changes(current: str | None, warned: bool) -> None:
    template: Obj = {"spec": {} if current is None else {"schedulerName": current}}
    with structlog.testing.capture_logs() as logs:
        VOLCANO.decorate_pod_template(template, _job_without_policy())
    assert any(entry["log_level"] == "warning" for entry in logs) is warned


def test_null_backend_leaves_pods_untouched_and_gives_no_decorator() -> None:
    template: Obj = {"metadata": {}, "spec": {"schedulerName": "mine"}}
    before = copy.deepcopy(template)
    NullBackend().decorate_pod_template(template, _job_without_policy())
    assert template == before
    assert decorator_for(NullBackend(), _job_without_policy()) is None


def test_decorator_for_binds_the_job_for_the_builders() -> None:
    decorate = decorator_for(PLUGINS, _job_without_policy())
    assert decorate is not None
    pod: Obj = {"metadata": {"name": "test-worker-0"}, "spec": {}}
    decorate(pod)
    assert pod["metadata"]["labels"] == {"scheduling.x-k8s.io/pod-group": "test"}
    assert pod["spec"]["schedulerName"] == "default-scheduler"


def test_null_backend_builds_no_pod_group() -> None:
    with pytest.raises(RuntimeError, match="gang scheduling is off"):
        NullBackend().new_pod_group(_job_without_policy(), None)


# Backend selection (§3.1)


def test_empty_flag_turns_gang_scheduling_off() -> None:
    backend = new_backend("")
    assert not backend.enabled
    assert backend.resource is None
    assert backend.scheduler_name == ""


def test_exactly_volcano_selects_volcano() -> None:
    backend = new_backend("volcano")
    assert backend.enabled
    assert backend.resource == VOLCANO_POD_GROUPS
    assert backend.scheduler_name == "volcano"


@pytest.mark.parametrize("flag", ["scheduler-plugins", "scheduler-plugins-scheduler", "Volcano"])
def test_any_other_flag_is_a_scheduler_plugins_scheduler_used_verbatim(flag: str) -> None:
    backend = new_backend(flag)
    assert backend.resource == SCHEDULER_PLUGINS_POD_GROUPS
    assert backend.scheduler_name == flag
    assert backend.name == flag


def test_scheduler_plugins_needs_a_scheduler_name() -> None:
    with pytest.raises(ValueError, match="scheduler name"):
        SchedulerPluginsBackend("")


# Spec equality (§3.2)


def _pg(**spec: Any) -> Obj:
    return {"spec": spec}


@pytest.mark.parametrize("backend", [VOLCANO, PLUGINS], ids=["volcano", "scheduler-plugins"])
def test_spec_equality_compares_quantities_by_value(backend: PodGroupBackend) -> None:
    a = _pg(minMember=3, minResources={"memory": "1Gi", "cpu": "1"}, scheduleTimeoutSeconds=0)
    b = _pg(minMember=3, minResources={"cpu": "1000m", "memory": "1024Mi"}, scheduleTimeoutSeconds=0)
    assert backend.pod_group_spec_equal(a, b)
    c = _pg(minMember=3, minResources={"cpu": "1001m", "memory": "1Gi"}, scheduleTimeoutSeconds=0)
    assert not backend.pod_group_spec_equal(a, c)


@pytest.mark.parametrize("backend", [VOLCANO, PLUGINS], ids=["volcano", "scheduler-plugins"])
def test_spec_equality_treats_nil_and_empty_maps_and_zero_values_as_absent(backend: PodGroupBackend) -> None:
    a = _pg(minResources={}, minMember=0, scheduleTimeoutSeconds=5)
    assert backend.pod_group_spec_equal(a, _pg(scheduleTimeoutSeconds=5, minResources=None))


def test_volcano_spec_equality_sees_queue_priority_and_min_member_changes() -> None:
    desired = VOLCANO.new_pod_group(_job_with_every_policy_field(), None)
    for name, value in [("queue", "other"), ("priorityClassName", "low"), ("minMember", 5)]:
        existing = copy.deepcopy(desired)
        existing["spec"][name] = value
        assert not VOLCANO.pod_group_spec_equal(existing, desired), name
    assert VOLCANO.pod_group_spec_equal(copy.deepcopy(desired), desired)


def test_scheduler_plugins_timeout_zero_differs_from_unset() -> None:
    assert not PLUGINS.pod_group_spec_equal(_pg(scheduleTimeoutSeconds=0), _pg())
    assert not PLUGINS.pod_group_spec_equal(_pg(scheduleTimeoutSeconds=100), _pg(scheduleTimeoutSeconds=0))


def test_spec_equality_ignores_fields_the_backend_does_not_own() -> None:
    existing = _pg(minMember=2, queue="q", minTaskMember={"worker": 1})
    assert VOLCANO.pod_group_spec_equal(existing, _pg(minMember=2, queue="q"))
    # Volcano fields are not scheduler-plugins' business, and the other way round.
    assert PLUGINS.pod_group_spec_equal(
        _pg(queue="a", scheduleTimeoutSeconds=0), _pg(scheduleTimeoutSeconds=0)
    )
    assert VOLCANO.pod_group_spec_equal(_pg(scheduleTimeoutSeconds=1), _pg())


def test_unparseable_quantities_compare_as_text() -> None:
    assert VOLCANO.pod_group_spec_equal(_pg(minResources={"cpu": "x"}), _pg(minResources={"cpu": "x"}))
    assert not VOLCANO.pod_group_spec_equal(_pg(minResources={"cpu": "x"}), _pg(minResources={"cpu": "1"}))


def test_volcano_absent_queue_equals_the_crds_default_queue() -> None:
    # The API server stores an omitted queue as "default"; that is no reason to update the PodGroup.
    assert VOLCANO.pod_group_spec_equal(_pg(minMember=3, queue="default"), _pg(minMember=3))
    assert not VOLCANO.pod_group_spec_equal(_pg(minMember=3, queue="other"), _pg(minMember=3))


@pytest.mark.parametrize("backend", [VOLCANO, PLUGINS], ids=["volcano", "scheduler-plugins"])
def test_pod_group_without_the_launcher_in_the_gang_counts_workers_only(backend: PodGroupBackend) -> None:
    job = _job_without_policy()
    spec = backend.new_pod_group(job, None, launcher_in_gang=False)["spec"]
    assert spec["minMember"] == 2
    assert spec["minResources"] == {"cpu": "20", "memory": "40Gi"}
