"""Kueue's API objects (kueue.x-k8s.io/v1beta2) as tests write them, and the labels jobs carry for Kueue.

Only v1beta2 is used: the CRDs serve v1beta1 too, but without Kueue's conversion webhook (a service
reference a local API server cannot reach) the two would not convert.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

API_VERSION = "kueue.x-k8s.io/v1beta2"
# On a job: the LocalQueue that admits it, and the WorkloadPriorityClass that ranks it.
QUEUE_NAME_LABEL = "kueue.x-k8s.io/queue-name"
PRIORITY_CLASS_LABEL = "kueue.x-k8s.io/priority-class"
# On a pod template: the topology level all of its pods must share (topology-aware scheduling).
PODSET_REQUIRED_TOPOLOGY = "kueue.x-k8s.io/podset-required-topology"
# The scheduling gate Kueue puts on topology-assigned pod templates and lifts from each pod itself.
TOPOLOGY_GATE = "kueue.x-k8s.io/topology"
# On pod templates: pod sets of one group are placed in one topology domain together.
PODSET_GROUP_NAME = "kueue.x-k8s.io/podset-group-name"
# The annotation Kueue's admission puts on the job and its pod templates: the job's Workload.
WORKLOAD_ANNOTATION = "kueue.x-k8s.io/workload"
HOSTNAME_LABEL = "kubernetes.io/hostname"

# Plural resource names, for REST paths.
PLURALS = {
    "ResourceFlavor": "resourceflavors",
    "ClusterQueue": "clusterqueues",
    "LocalQueue": "localqueues",
    "WorkloadPriorityClass": "workloadpriorityclasses",
    "Topology": "topologies",
    "Workload": "workloads",
    "Cohort": "cohorts",
    "AdmissionCheck": "admissionchecks",
    "MultiKueueCluster": "multikueueclusters",
    "MultiKueueConfig": "multikueueconfigs",
}


def path(kind: str, name: str = "", namespace: str | None = None) -> str:
    """The REST path of a Kueue kind's collection, or of one object when `name` is given."""
    base = f"/apis/{API_VERSION}"
    if namespace is not None:
        base += f"/namespaces/{namespace}"
    base += f"/{PLURALS[kind]}"
    return f"{base}/{name}" if name else base


def _object(kind: str, name: str, spec: dict[str, Any], namespace: str | None = None) -> dict[str, Any]:
    metadata: dict[str, Any] = {"name": name}
    if namespace is not None:
        metadata["namespace"] = namespace
    return {"apiVersion": API_VERSION, "kind": kind, "metadata": metadata, "spec": spec}


def resource_flavor(
    name: str,
    *,
    node_labels: Mapping[str, str] | None = None,
    tolerations: Sequence[Mapping[str, Any]] = (),
    topology_name: str | None = None,
) -> dict[str, Any]:
    """A flavor: admission puts its node labels (as nodeSelector) and tolerations on the job's pods."""
    spec: dict[str, Any] = {}
    if node_labels:
        spec["nodeLabels"] = dict(node_labels)
    if tolerations:
        spec["tolerations"] = [dict(t) for t in tolerations]
    if topology_name:
        spec["topologyName"] = topology_name
    return _object("ResourceFlavor", name, spec)


def cluster_queue(
    name: str,
    *,
    quotas: Mapping[str, Mapping[str, str]],
    preemption: Mapping[str, Any] | None = None,
    admission_checks: Sequence[str] = (),
    cohort: str | None = None,
) -> dict[str, Any]:
    """A ClusterQueue for every namespace with one resource group: `quotas` maps flavor -> resource -> quota.

    Its covered resources are all resources any flavor names (each flavor must then name each of them).
    """
    covered: list[str] = []
    for resources in quotas.values():
        covered.extend(r for r in resources if r not in covered)
    flavors = [
        {
            "name": flavor,
            "resources": [{"name": r, "nominalQuota": resources[r]} for r in covered],
        }
        for flavor, resources in quotas.items()
    ]
    spec: dict[str, Any] = {
        "namespaceSelector": {},
        "resourceGroups": [{"coveredResources": covered, "flavors": flavors}],
    }
    if preemption:
        spec["preemption"] = dict(preemption)
    if admission_checks:
        spec["admissionChecksStrategy"] = {"admissionChecks": [{"name": c} for c in admission_checks]}
    if cohort:
        spec["cohortName"] = cohort
    return _object("ClusterQueue", name, spec)


def local_queue(name: str, namespace: str, cluster_queue: str) -> dict[str, Any]:
    return _object("LocalQueue", name, {"clusterQueue": cluster_queue}, namespace=namespace)


def workload_priority_class(name: str, value: int, description: str = "") -> dict[str, Any]:
    body: dict[str, Any] = {
        "apiVersion": API_VERSION,
        "kind": "WorkloadPriorityClass",
        "metadata": {"name": name},
    }
    body["value"] = value
    if description:
        body["description"] = description
    return body


def topology(name: str, levels: Sequence[str]) -> dict[str, Any]:
    """Topology levels from the widest (e.g. a block label) to the narrowest (usually the hostname)."""
    return _object("Topology", name, {"levels": [{"nodeLabel": level} for level in levels]})


def queued(job: dict[str, Any], queue: str, *, priority_class: str | None = None) -> dict[str, Any]:
    """`job` (any object) labelled for `queue` and, if given, ranked by `priority_class`; edited in place."""
    labels = job.setdefault("metadata", {}).setdefault("labels", {})
    labels[QUEUE_NAME_LABEL] = queue
    if priority_class:
        labels[PRIORITY_CLASS_LABEL] = priority_class
    return job
