"""Pieces both PodGroup backends render the same way: metadata and the scheduler name."""

from __future__ import annotations

import structlog

from mpioperator.api.names import pod_group_name
from mpioperator.api.objects import Obj
from mpioperator.api.ownership import controller_ref
from mpioperator.kube.resources import Resource
from mpioperator.podgroup.quantity import format_quantity
from mpioperator.podgroup.resources import ResourceMap

log = structlog.get_logger(__name__)


def owned_object(resource: Resource, job: Obj, spec: Obj) -> Obj:
    """An object of `resource` with `spec`, named after the job and controlled by it (a PodGroup, a
    Workload)."""
    return {
        "apiVersion": resource.api_version,
        "kind": resource.kind,
        "metadata": pod_group_metadata(job),
        "spec": spec,
    }


def pod_group_metadata(job: Obj) -> Obj:
    """Named after the job, in its namespace, controlled by it; no labels or annotations."""
    return {
        "name": pod_group_name(job),
        "namespace": job["metadata"].get("namespace", ""),
        "ownerReferences": [controller_ref(job)],
    }


def resource_strings(resources: ResourceMap) -> dict[str, str]:
    return {name: format_quantity(quantity) for name, quantity in resources.items()}


def force_scheduler_name(template: Obj, scheduler_name: str) -> None:
    """Overwrite spec.schedulerName; upstream warns whenever it differs, even when it was unset."""
    spec = template.setdefault("spec", {})
    current = spec.get("schedulerName") or ""
    if current != scheduler_name:
        log.warning(
            "scheduler name is overwritten when gang scheduling is enabled",
            specified=current,
            scheduler_name=scheduler_name,
        )
    spec["schedulerName"] = scheduler_name


def template_metadata_map(template: Obj, key: str) -> dict[str, str]:
    metadata = template.get("metadata")
    if metadata is None:
        metadata = template["metadata"] = {}
    values = metadata.get(key)
    if values is None:
        values = metadata[key] = {}
    return values
