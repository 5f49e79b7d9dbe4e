"""scheduler-plugins' Coscheduling PodGroup (scheduling.x-k8s.io/v1alpha1), §3.4 and §3.8."""

from __future__ import annotations

from typing import Final

from mpioperator.api import accessors
from mpioperator.api.names import pod_group_name
from mpioperator.api.objects import Obj
from mpioperator.kube.resources import SCHEDULER_PLUGINS_POD_GROUPS, Resource
from mpioperator.podgroup import maths
from mpioperator.podgroup.maths import PodRequests, PriorityLookup
from mpioperator.podgroup.render import (
    force_scheduler_name,
    pod_group_metadata,
    resource_strings,
    template_metadata_map,
)

POD_GROUP_LABEL: Final = "scheduling.x-k8s.io/pod-group"
SPEC_FIELDS: Final = ("minMember", "minResources", "scheduleTimeoutSeconds")
POINTER_FIELDS: Final = ("scheduleTimeoutSeconds",)


class SchedulerPluginsBackend:
    """Coscheduling: pods go to the scheduler named by the flag, verbatim, grouped by a label."""

    def __init__(self, scheduler_name: str, pod_requests: PodRequests | None = None) -> None:
        if not scheduler_name:
            raise ValueError("scheduler-plugins gang scheduling needs a scheduler name")
        self._scheduler_name = scheduler_name
        self._pod_requests = pod_requests

    @property
    def name(self) -> str:
        return self._scheduler_name

    @property
    def enabled(self) -> bool:
        return True

    @property
    def resource(self) -> Resource:
        return SCHEDULER_PLUGINS_POD_GROUPS

    @property
    def scheduler_name(self) -> str:
        return self._scheduler_name

    @property
    def updates_pod_group(self) -> bool:
        return True

    def new_pod_group(
        self, job: Obj, priority_of: PriorityLookup | None, *, launcher_in_gang: bool = True
    ) -> Obj:
        members = maths.min_member(job, launcher_in_gang)
        spec: Obj = {}
        if members:
            spec["minMember"] = members
        resources = maths.pod_group_min_resources(
            job, members, priority_of, self._pod_requests, launcher_in_gang
        )
        if resources:
            spec["minResources"] = resource_strings(resources)
        # A pointer in Go, set even when 0, so the field is always sent.
        timeout = accessors.scheduling_policy(job).get("scheduleTimeoutSeconds")
        spec["scheduleTimeoutSeconds"] = int(timeout or 0)
        return {
            "apiVersion": SCHEDULER_PLUGINS_POD_GROUPS.api_version,
            "kind": SCHEDULER_PLUGINS_POD_GROUPS.kind,
            "metadata": pod_group_metadata(job),
            "spec": spec,
        }

    def prerequisite(self, job: Obj, pod_group: Obj) -> tuple[Resource, Obj] | None:
        return None

    def decorate_pod_template(self, template: Obj, job: Obj) -> None:
        force_scheduler_name(template, self._scheduler_name)
        template_metadata_map(template, "labels")[POD_GROUP_LABEL] = pod_group_name(job)

    def pod_group_spec_equal(self, a: Obj, b: Obj) -> bool:
        return maths.specs_equal(a.get("spec"), b.get("spec"), SPEC_FIELDS, POINTER_FIELDS)
