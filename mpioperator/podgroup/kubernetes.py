"""Kubernetes' own gang scheduling: the Workload API (scheduling.k8s.io/v1alpha2, Kubernetes 1.36).

Each MPIJob gets a Workload with one PodGroupTemplate and a PodGroup made from it; both are owned by
the job and named after it. kube-scheduler's GangScheduling plugin reads only the PodGroup's
`schedulingPolicy.gang.minCount` (no resource pre-check, so `minResources` has no place here) and
finds a pod's group through `spec.schedulingGroup.podGroupName`; the pods keep their own scheduler.

The API makes a Workload's templates and a PodGroup's policy immutable, so the count is fixed when the
gang is made (at each start or resume), never updated in place.
"""

from __future__ import annotations

from typing import Final

from mpioperator.api import constants as api
from mpioperator.api.names import pod_group_name
from mpioperator.api.objects import Obj
from mpioperator.kube.resources import KUBERNETES_POD_GROUPS, WORKLOADS, Resource
from mpioperator.podgroup import maths
from mpioperator.podgroup.backend import Traits, WithTraits
from mpioperator.podgroup.maths import PriorityLookup
from mpioperator.podgroup.render import owned_object

# Kubernetes' name for the feature (its feature gate and scheduler plugin). A scheduler name is a
# lowercase DNS subdomain, so this value can never mean a scheduler-plugins scheduler.
NAME: Final = "GangScheduling"
# The Workload's only PodGroupTemplate (a DNS label).
TEMPLATE_NAME: Final = "mpijob"


def scheduling_policy(min_count: int) -> Obj:
    """A gang of `min_count`; an explicit minAvailable of 0 asks for no gang, the API's `basic` policy
    (a gang's minCount must be at least 1)."""
    if min_count < 1:
        return {"basic": {}}
    return {"gang": {"minCount": min_count}}


def min_count(pod_group: Obj) -> int:
    """The gang's minCount, 0 for a basic (non-gang) policy."""
    policy = (pod_group.get("spec") or {}).get("schedulingPolicy") or {}
    return int((policy.get("gang") or {}).get("minCount") or 0)


class KubernetesBackend(WithTraits):
    """Gang scheduling by kube-scheduler itself: Workload + PodGroup, pods linked by schedulingGroup."""

    traits = Traits(name=NAME, resource=KUBERNETES_POD_GROUPS, updates_pod_group=False)

    def new_pod_group(
        self, job: Obj, priority_of: PriorityLookup | None, *, launcher_in_gang: bool = True
    ) -> Obj:
        """The runtime PodGroup; the count is maths.min_member, the one every backend uses.

        Under WaitForWorkersReady the count is the workers only until the launcher Job exists
        (decisions-local L2). The group is not raised later (it is immutable) and need not be: the
        launcher pod is a member, and once the workers are bound the gang's quorum is already met.
        """
        name = pod_group_name(job)
        spec = {
            "podGroupTemplateRef": {
                "workload": {"workloadName": name, "podGroupTemplateName": TEMPLATE_NAME}
            },
            "schedulingPolicy": scheduling_policy(maths.min_member(job, launcher_in_gang)),
        }
        return owned_object(KUBERNETES_POD_GROUPS, job, spec)

    def prerequisite(self, job: Obj, pod_group: Obj) -> tuple[Resource, Obj] | None:
        """The Workload the PodGroup is made from; the API server refuses the PodGroup without it."""
        policy = (pod_group.get("spec") or {}).get("schedulingPolicy") or {}
        spec = {
            "controllerRef": {"apiGroup": api.GROUP, "kind": api.KIND, "name": job["metadata"]["name"]},
            "podGroupTemplates": [{"name": TEMPLATE_NAME, "schedulingPolicy": policy}],
        }
        return WORKLOADS, owned_object(WORKLOADS, job, spec)

    def decorate_pod_template(self, template: Obj, job: Obj) -> None:
        """Link the pod to its group; its schedulerName stays the user's (kube-scheduler by default)."""
        spec = template.setdefault("spec", {})
        spec["schedulingGroup"] = {"podGroupName": pod_group_name(job)}

    def pod_group_spec_equal(self, a: Obj, b: Obj) -> bool:
        a_spec, b_spec = a.get("spec") or {}, b.get("spec") or {}
        return bool(
            a_spec.get("schedulingPolicy") == b_spec.get("schedulingPolicy")
            and a_spec.get("podGroupTemplateRef") == b_spec.get("podGroupTemplateRef")
        )
