"""The PodGroup backend the --gang-scheduling flag selects."""

from __future__ import annotations

from mpioperator.podgroup.backend import PodGroupBackend
from mpioperator.podgroup.kubernetes import NAME as KUBERNETES
from mpioperator.podgroup.kubernetes import KubernetesBackend
from mpioperator.podgroup.maths import PodRequests
from mpioperator.podgroup.null import NullBackend
from mpioperator.podgroup.scheduler_plugins import SchedulerPluginsBackend
from mpioperator.podgroup.volcano import NAME as VOLCANO
from mpioperator.podgroup.volcano import VolcanoBackend


def new_backend(gang_scheduling: str, pod_requests: PodRequests | None = None) -> PodGroupBackend:
    """ "" turns gang scheduling off, exactly "volcano" picks Volcano, exactly "GangScheduling"
    Kubernetes' own (the Workload API), anything else is the name of a scheduler-plugins scheduler,
    used verbatim as the pods' schedulerName."""
    if not gang_scheduling:
        return NullBackend()
    if gang_scheduling == KUBERNETES:
        return KubernetesBackend()
    if gang_scheduling == VOLCANO:
        return VolcanoBackend(pod_requests)
    return SchedulerPluginsBackend(gang_scheduling, pod_requests)
