"""Resource sums over pod templates: upstream's per-container rule, and the scheduler's own rule.

Quantities are parsed from the template dicts; results are maps of resource name to Quantity.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from mpioperator.api.objects import Obj
from mpioperator.podgroup.quantity import Quantity, parse_resource_list

ResourceMap = dict[str, Quantity]

RESTART_POLICY_ALWAYS = "Always"
# Resources a pod-level `spec.resources` may set (the PodLevelResources feature).
_POD_LEVEL_RESOURCES = ("cpu", "memory")
_HUGEPAGES_PREFIX = "hugepages-"


def container_requests(requirements: Mapping[str, Any] | None) -> ResourceMap:
    """Requests, plus each limit whose resource has no request (what the API server defaults)."""
    requirements = requirements or {}
    merged = parse_resource_list(requirements.get("requests"))
    for name, limit in parse_resource_list(requirements.get("limits")).items():
        merged.setdefault(name, limit)
    return merged


def add_resources(
    total: Mapping[str, Quantity] | None, requirements: Mapping[str, Any] | None, replicas: int
) -> ResourceMap | None:
    """Upstream's addResources: `total` plus `replicas` copies of one container's requests.

    A missing total stays missing, and a container with no requests, limits or claims adds nothing.
    """
    if total is None:
        return None
    out = dict(total)
    if not requirements:
        return out
    for name, quantity in container_requests(requirements).items():
        scaled = quantity * replicas
        out[name] = out[name] + scaled if name in out else scaled
    return out


def sum_resources(*maps: Mapping[str, Quantity]) -> ResourceMap:
    out: ResourceMap = {}
    for resources in maps:
        for name, quantity in resources.items():
            out[name] = out[name] + quantity if name in out else quantity
    return out


def max_resources(a: Mapping[str, Quantity], b: Mapping[str, Quantity]) -> ResourceMap:
    """Per resource, the larger amount; a resource present on one side only is kept."""
    out = dict(a)
    for name, quantity in b.items():
        if name not in out or quantity > out[name]:
            out[name] = quantity
    return out


def scale_resources(resources: Mapping[str, Quantity], factor: int) -> ResourceMap:
    return {name: quantity * factor for name, quantity in resources.items()}


def upstream_pod_requests(pod_spec: Mapping[str, Any] | None) -> ResourceMap:
    """What upstream counts for one pod: regular containers only."""
    total: ResourceMap = {}
    for container in _containers(pod_spec, "containers"):
        total = sum_resources(total, container_requests(container.get("resources")))
    return total


def effective_pod_requests(pod_spec: Mapping[str, Any] | None) -> ResourceMap:
    """What kube-scheduler reserves for one pod, which upstream's minResources under-counts.

    Regular containers and native sidecars (init containers with restartPolicy Always) run
    together; each plain init container runs alone beside the sidecars started before it. The pod
    needs the larger of the two, per resource, then any pod-level requests, then pod overhead.
    """
    spec = pod_spec or {}
    running = upstream_pod_requests(spec)
    sidecars: ResourceMap = {}
    init_peak: ResourceMap = {}
    for container in _containers(spec, "initContainers"):
        requests = container_requests(container.get("resources"))
        if container.get("restartPolicy") == RESTART_POLICY_ALWAYS:
            sidecars = sum_resources(sidecars, requests)
            during = sidecars
        else:
            during = sum_resources(requests, sidecars)
        init_peak = max_resources(init_peak, during)
    total = max_resources(sum_resources(running, sidecars), init_peak)
    for name, quantity in container_requests(spec.get("resources")).items():
        if name in _POD_LEVEL_RESOURCES or name.startswith(_HUGEPAGES_PREFIX):
            total[name] = quantity
    return sum_resources(total, parse_resource_list(spec.get("overhead")))


def _containers(pod_spec: Mapping[str, Any] | None, key: str) -> Iterable[Obj]:
    return (pod_spec or {}).get(key) or ()
