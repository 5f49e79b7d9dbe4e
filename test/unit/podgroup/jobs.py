"""MPIJob fixtures for the podgroup tests, shaped like upstream's podgroup_test.go tables."""

from __future__ import annotations

from mpioperator.api.objects import Obj
from mpioperator.podgroup.maths import PriorityLookup
from mpioperator.podgroup.quantity import Quantity, parse_resource_list

# The controller reference every PodGroup (and Workload) of `mpijob()`'s job carries.
OWNER = {
    "apiVersion": "kubeflow.org/v2beta1",
    "kind": "MPIJob",
    "name": "test",
    "uid": "uid-1",
    "controller": True,
    "blockOwnerDeletion": True,
}


def resources(requests: dict[str, str] | None = None, limits: dict[str, str] | None = None) -> Obj:
    out: Obj = {}
    if requests is not None:
        out["requests"] = requests
    if limits is not None:
        out["limits"] = limits
    return out


def container(
    requests: dict[str, str] | None = None, limits: dict[str, str] | None = None, name: str = "main"
) -> Obj:
    return {"name": name, "image": "mpi", "resources": resources(requests, limits)}


def replica(replicas: int | None, *containers: Obj, priority_class: str = "") -> Obj:
    spec: Obj = {"containers": list(containers)}
    if priority_class:
        spec["priorityClassName"] = priority_class
    out: Obj = {"template": {"spec": spec}}
    if replicas is not None:
        out["replicas"] = replicas
    return out


def mpijob(
    launcher: Obj | None = None,
    worker: Obj | None = None,
    policy: Obj | None = None,
    annotations: dict[str, str] | None = None,
    **extra_replicas: Obj,
) -> Obj:
    specs: Obj = {}
    if launcher is not None:
        specs["Launcher"] = launcher
    if worker is not None:
        specs["Worker"] = worker
    specs.update(extra_replicas)
    run_policy: Obj = {"cleanPodPolicy": "Running"}
    if policy is not None:
        run_policy["schedulingPolicy"] = policy
    metadata: Obj = {"name": "test", "namespace": "default", "uid": "uid-1"}
    if annotations:
        metadata["annotations"] = annotations
    return {
        "apiVersion": "kubeflow.org/v2beta1",
        "kind": "MPIJob",
        "metadata": metadata,
        "spec": {"slotsPerWorker": 1, "runPolicy": run_policy, "mpiReplicaSpecs": specs},
    }


def priorities(**values: int) -> PriorityLookup:
    """A PriorityClass lookup over the given classes; every other name is missing."""

    def lookup(name: str) -> int | None:
        return values.get(name)

    return lookup


def q(values: dict[str, str]) -> dict[str, Quantity]:
    """A resource map as the podgroup maths keeps it, from its strings."""
    return parse_resource_list(values)
