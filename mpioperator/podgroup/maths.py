"""The PodGroup numbers the backends share (who counts in the gang, its minimum members, priority class and
minimum resources, as upstream computes them) and the semantic equality of PodGroup specs."""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass
from typing import Any

import structlog

from mpioperator.api import constants as api
from mpioperator.api.accessors import launcher_creation_policy, scheduling_policy, worker_replicas
from mpioperator.api.extensions.launch import waits_for_running_workers
from mpioperator.api.objects import Obj
from mpioperator.podgroup.quantity import parse_resource_list
from mpioperator.podgroup.resources import ResourceMap, add_resources, scale_resources, sum_resources

# A cluster PriorityClass's value by name; None when the class does not exist.
PriorityLookup = Callable[[str], int | None]
# Requests of one pod, from its pod spec.
PodRequests = Callable[[Mapping[str, Any]], ResourceMap]

log = structlog.get_logger(__name__)


def _replica_specs(job: Obj) -> Obj:
    return (job.get("spec") or {}).get("mpiReplicaSpecs") or {}


def _template_spec(replica: Obj | None) -> Obj:
    return ((replica or {}).get("template") or {}).get("spec") or {}


def launcher_in_gang(job: Obj, launcher_exists: bool, *, waits_running: bool | None = None) -> bool:
    """Whether the gang counts the launcher pod (our fix of a gang deadlock, docs/decisions-local.md L2).

    Under WaitForWorkersReady the launcher Job is made only once every worker is Ready (and for an
    exec-agent job that waits for its hosts, Running), so a gang that
    waits for the launcher never lets the workers start. The gang therefore counts the launcher only
    once its Job exists, or when it is made together with the workers: AtStartup, or no workers to
    wait for. An explicit minAvailable is the user's own number and keeps upstream's meaning.
    `waits_running`: whether the job's launcher waits for Running workers (the sync's parsed launch
    settings); read from the job when None.
    """
    if launcher_exists or scheduling_policy(job).get("minAvailable") is not None:
        return True
    if waits_running is None:
        waits_running = waits_for_running_workers(job)
    waits = launcher_creation_policy(job) == api.WAIT_FOR_WORKERS_READY or waits_running
    if not waits:
        return True
    return worker_replicas(job) == 0


def min_member(job: Obj, launcher_in_gang: bool = True) -> int:
    """schedulingPolicy.minAvailable, else every worker plus the launcher when the gang counts it."""
    min_available = scheduling_policy(job).get("minAvailable")
    if min_available is not None:
        return int(min_available)
    return worker_replicas(job) + (1 if launcher_in_gang else 0)


def priority_class_name(job: Obj) -> str:
    """First non-empty of the policy's priorityClass, the launcher's and the worker's template."""
    specs = _replica_specs(job)
    candidates = (
        scheduling_policy(job).get("priorityClass"),
        _template_spec(specs.get(api.LAUNCHER)).get("priorityClassName"),
        _template_spec(specs.get(api.WORKER)).get("priorityClassName"),
    )
    return next((str(name) for name in candidates if name), "")


@dataclass(frozen=True, slots=True)
class ReplicaPriority:
    replica_type: str
    priority: int
    replicas: int | None
    template: Obj


def replicas_order(replica_specs: Obj, priority_of: PriorityLookup | None) -> list[ReplicaPriority]:
    """Replica specs by PriorityClass value, highest first; ties keep their input order.

    A missing or unnamed class counts as 0; the cluster's globalDefault class is not consulted.
    """
    entries = []
    for replica_type, replica in replica_specs.items():
        replica = replica or {}
        priority = 0
        name = _template_spec(replica).get("priorityClassName")
        if name and priority_of is not None:
            value = priority_of(str(name))
            if value is None:
                log.warning("priority class not found, counting it as 0", priority_class=name)
            else:
                priority = value
        replicas = replica.get("replicas")
        entries.append(
            ReplicaPriority(
                str(replica_type),
                priority,
                None if replicas is None else int(replicas),
                replica.get("template") or {},
            )
        )
    return sorted(entries, key=lambda entry: -entry.priority)


def gang_minimum(
    job: Obj,
    priority_of: PriorityLookup | None,
    pod_requests: PodRequests | None = None,
    launcher_in_gang: bool = True,
) -> tuple[Obj, ResourceMap | None]:
    """A PodGroup spec holding its minMember (left out when 0, as the Go types' omitempty does), and the
    minResources for it: what every backend with a PodGroup object starts its spec from."""
    members = min_member(job, launcher_in_gang)
    spec: Obj = {"minMember": members} if members else {}
    return spec, pod_group_min_resources(job, members, priority_of, pod_requests, launcher_in_gang)


def pod_group_min_resources(
    job: Obj,
    members: int | None,
    priority_of: PriorityLookup | None,
    pod_requests: PodRequests | None = None,
    launcher_in_gang: bool = True,
) -> ResourceMap | None:
    """The PodGroup's minResources: the policy's verbatim, none for an empty gang, else the resources the
    gang needs when only `members` pods must start, lowest priority cut first.

    With equal priorities the workers are cut; otherwise the second entry is, whichever type it
    is (so a worker class above the launcher's cuts the launcher, as upstream does). Every map
    key counts, extra ones included. `pod_requests` replaces upstream's containers-only sum,
    e.g. with `effective_pod_requests`; the default is upstream's rule. A launcher left out of
    the gang (`launcher_in_gang`) adds nothing.
    """
    explicit = scheduling_policy(job).get("minResources")
    if explicit is not None:
        return parse_resource_list(explicit)
    if members is not None and members == 0:
        return None
    specs = _replica_specs(job)
    if not launcher_in_gang:
        specs = {kind: replica for kind, replica in specs.items() if kind != api.LAUNCHER}
    order = replicas_order(specs, priority_of)
    if not order:
        return {}
    counts = [entry.replicas for entry in order]
    total = sum(count or 0 for count in counts[:2])
    if members is not None and total > members:
        # Upstream indexes past the end with a single entry; treating it as a tie is the safe reading.
        if len(order) < 2 or order[0].priority == order[1].priority:
            worker = next((i for i, e in enumerate(order) if e.replica_type == api.WORKER), None)
            if worker is None:
                log.warning("cannot fit the gang into minMember without a worker replica spec")
                return None
            counts[worker] = members - 1
        else:
            counts[1] = members - 1
    result: ResourceMap = {}
    for entry, count in zip(order, counts, strict=True):
        if count is None:
            continue
        spec = entry.template.get("spec") or {}
        if pod_requests is not None:
            result = sum_resources(result, scale_resources(pod_requests(spec), count))
            continue
        for container in spec.get("containers") or ():
            result = add_resources(result, container.get("resources"), count) or {}
    return result


def specs_equal(
    a: Mapping[str, Any] | None,
    b: Mapping[str, Any] | None,
    fields: Collection[str],
    pointer_fields: Collection[str] = (),
) -> bool:
    """Semantic equality of the PodGroup spec fields a backend owns.

    Absent, null and zero values are equal (Go's omitempty value fields), except for pointer
    fields where 0 is not absent; `minResources` compares by quantity value, empty == absent.
    Fields the backend does not own are ignored, so server-side additions cause no update loop.
    """
    a, b = a or {}, b or {}
    for name in fields:
        left, right = a.get(name), b.get(name)
        if name == "minResources":
            if not _resource_lists_equal(left, right):
                return False
        elif name in pointer_fields:
            if left != right:
                return False
        elif (left or None) != (right or None):
            return False
    return True


def _resource_lists_equal(left: Any, right: Any) -> bool:
    try:
        return parse_resource_list(left) == parse_resource_list(right)
    except (ValueError, TypeError):
        return bool(left == right)
