"""Volcano's PodGroup (scheduling.volcano.sh/v1beta1) and its pods' decoration: the `volcano` scheduler
and the group-name annotation."""

from __future__ import annotations

from typing import Final

from mpioperator.api import accessors
from mpioperator.api.names import pod_group_name
from mpioperator.api.objects import Obj
from mpioperator.kube.resources import VOLCANO_POD_GROUPS
from mpioperator.podgroup import maths
from mpioperator.podgroup.backend import Traits, WithTraits
from mpioperator.podgroup.maths import PodRequests, PriorityLookup
from mpioperator.podgroup.render import (
    force_scheduler_name,
    owned_object,
    resource_strings,
    template_metadata_map,
)

NAME: Final = "volcano"
SCHEDULER_NAME: Final = "volcano"
GROUP_NAME_ANNOTATION: Final = "scheduling.k8s.io/group-name"
QUEUE_NAME_ANNOTATION: Final = "scheduling.volcano.sh/queue-name"
SPEC_FIELDS: Final = ("minMember", "queue", "priorityClassName", "minResources")
# The queue Volcano's PodGroup CRD defaults an omitted `spec.queue` to.
DEFAULT_QUEUE: Final = "default"


def queue_name(job: Obj) -> str:
    """The policy's queue, else the MPIJob's queue-name annotation, else none."""
    queue = accessors.scheduling_policy(job).get("queue")
    if queue:
        return str(queue)
    annotations = job["metadata"].get("annotations") or {}
    return str(annotations.get(QUEUE_NAME_ANNOTATION) or "")


class VolcanoBackend(WithTraits):
    """Volcano gang scheduling: pods go to the `volcano` scheduler, grouped by an annotation."""

    traits = Traits(name=NAME, resource=VOLCANO_POD_GROUPS, scheduler_name=SCHEDULER_NAME)

    def __init__(self, pod_requests: PodRequests | None = None) -> None:
        self._pod_requests = pod_requests

    def new_pod_group(
        self, job: Obj, priority_of: PriorityLookup | None, *, launcher_in_gang: bool = True
    ) -> Obj:
        # Field order and omissions follow the Go type's JSON (omitempty on every field).
        spec, resources = maths.gang_minimum(job, priority_of, self._pod_requests, launcher_in_gang)
        queue = queue_name(job)
        if queue:
            spec["queue"] = queue
        priority_class = maths.priority_class_name(job)
        if priority_class:
            spec["priorityClassName"] = priority_class
        if resources is not None:
            # A pointer in Go: an empty list is still sent, as {}.
            spec["minResources"] = resource_strings(resources)
        return owned_object(VOLCANO_POD_GROUPS, job, spec)

    def decorate_pod_template(self, template: Obj, job: Obj) -> None:
        force_scheduler_name(template, SCHEDULER_NAME)
        template_metadata_map(template, "annotations")[GROUP_NAME_ANNOTATION] = pod_group_name(job)

    def pod_group_spec_equal(self, a: Obj, b: Obj) -> bool:
        return maths.specs_equal(_with_queue(a.get("spec")), _with_queue(b.get("spec")), SPEC_FIELDS)


def _with_queue(spec: Obj | None) -> Obj:
    """The spec with Volcano's CRD default queue filled in: the API server stores an omitted queue as
    "default", and comparing that with our omission would update the PodGroup on every sync."""
    spec = dict(spec or {})
    spec["queue"] = spec.get("queue") or DEFAULT_QUEUE
    return spec
