"""scheduler-plugins' Coscheduling PodGroup (scheduling.x-k8s.io/v1alpha1) and its pods' decoration: the
scheduler the flag names, and the pod-group label."""

from __future__ import annotations

from typing import Final

from mpioperator.api import accessors
from mpioperator.api.names import pod_group_name
from mpioperator.api.objects import Obj
from mpioperator.kube.resources import SCHEDULER_PLUGINS_POD_GROUPS
from mpioperator.podgroup import maths
from mpioperator.podgroup.backend import Traits, WithTraits
from mpioperator.podgroup.maths import PodRequests, PriorityLookup
from mpioperator.podgroup.render import (
    force_scheduler_name,
    owned_object,
    resource_strings,
    template_metadata_map,
)

POD_GROUP_LABEL: Final = "scheduling.x-k8s.io/pod-group"
SPEC_FIELDS: Final = ("minMember", "minResources", "scheduleTimeoutSeconds")
POINTER_FIELDS: Final = ("scheduleTimeoutSeconds",)


class SchedulerPluginsBackend(WithTraits):
    """Coscheduling: pods go to the scheduler named by the flag, verbatim, grouped by a label."""

    def __init__(self, scheduler_name: str, pod_requests: PodRequests | None = None) -> None:
        if not scheduler_name:
            raise ValueError("scheduler-plugins gang scheduling needs a scheduler name")
        self.traits = Traits(
            name=scheduler_name, resource=SCHEDULER_PLUGINS_POD_GROUPS, scheduler_name=scheduler_name
        )
        self._pod_requests = pod_requests

    def new_pod_group(
        self, job: Obj, priority_of: PriorityLookup | None, *, launcher_in_gang: bool = True
    ) -> Obj:
        spec, resources = maths.gang_minimum(job, priority_of, self._pod_requests, launcher_in_gang)
        if resources:
            spec["minResources"] = resource_strings(resources)
        # A pointer in Go, set even when 0, so the field is always sent.
        timeout = accessors.scheduling_policy(job).get("scheduleTimeoutSeconds")
        spec["scheduleTimeoutSeconds"] = int(timeout or 0)
        return owned_object(SCHEDULER_PLUGINS_POD_GROUPS, job, spec)

    def decorate_pod_template(self, template: Obj, job: Obj) -> None:
        force_scheduler_name(template, self.traits.scheduler_name)
        template_metadata_map(template, "labels")[POD_GROUP_LABEL] = pod_group_name(job)

    def pod_group_spec_equal(self, a: Obj, b: Obj) -> bool:
        return maths.specs_equal(a.get("spec"), b.get("spec"), SPEC_FIELDS, POINTER_FIELDS)
