"""The children of 200 random valid MPIJobs pass the real API server's validation and admission.

Each MPIJob is first created with server-side dry-run (`dryRun=All`: validated, defaulted, admitted, never
stored), so the CRD accepts it and the operator sees it exactly as stored, CRD defaults included. From that
object every child is built, gang scheduling off, Volcano or scheduler-plugins, and each is dry-run created:
Service, ConfigMap, SSH Secret, every worker Pod, the launcher Job and the PodGroup.
"""

from __future__ import annotations

import contextlib
import copy
import uuid
from collections.abc import Iterator

import pytest
from hypothesis import event, given, settings
from hypothesis import strategies as st

from mpioperator.api.defaults import set_defaults
from mpioperator.api.objects import Obj
from mpioperator.controller.builders import configmap, secret, service
from mpioperator.controller.controller import gang_backend
from mpioperator.controller.decorators import compose
from mpioperator.podgroup import maths
from mpioperator.podgroup.backend import decorator_for
from mpioperator.testing.cluster import LocalCluster
from mpioperator.testing.rest import RestError
from test.fuzz import specs
from test.fuzz.priority_classes import priority_classes

SPECS = 200
BACKENDS = ("", "volcano", "scheduler-plugins-scheduler")
PLURALS = {
    "Service": "services",
    "ConfigMap": "configmaps",
    "Secret": "secrets",
    "Pod": "pods",
    "Job": "jobs",
    "PodGroup": "podgroups",
    "MPIJob": "mpijobs",
}


@pytest.fixture(scope="module")
def fuzz_namespace(podgroup_crds: LocalCluster) -> Iterator[tuple[LocalCluster, str]]:
    """A namespace, and the PriorityClasses the random templates may name."""
    cluster = podgroup_crds
    name = f"fuzz-dry-run-{uuid.uuid4().hex[:6]}"
    cluster.rest.create("/api/v1/namespaces", {"metadata": {"name": name}})
    with priority_classes(cluster):
        yield cluster, name
    with contextlib.suppress(RestError):
        cluster.rest.delete(f"/api/v1/namespaces/{name}")


def dry_run(cluster: LocalCluster, namespace: str, obj: Obj) -> Obj:
    """Create `obj` with dryRun=All; the object as the server would have stored it."""
    group_version = obj["apiVersion"]
    root = "/api/v1" if group_version == "v1" else f"/apis/{group_version}"
    path = f"{root}/namespaces/{namespace}/{PLURALS[obj['kind']]}?dryRun=All"
    try:
        return cluster.rest.create(path, obj)
    except RestError as err:
        raise AssertionError(f"{obj['kind']} {obj['metadata'].get('name')} rejected: {err}") from None


def children(job: Obj, backend_name: str, launcher_exists: bool) -> list[Obj]:
    backend = gang_backend(backend_name)
    decorate = [d] if (d := decorator_for(backend, job)) else []
    workers = int((job["spec"]["mpiReplicaSpecs"].get("Worker") or {}).get("replicas") or 0)
    pods = [compose.new_worker(job, i, decorate) for i in range(workers)]
    launcher, _ = compose.new_launcher_job(job, decorate)
    built = [
        service.new_service(job),
        configmap.new_config_map(job, pods),
        secret.new_ssh_secret(job),
        *pods,
        launcher,
    ]
    if backend.enabled:
        priority_of = specs.PRIORITY_CLASSES.get
        in_gang = maths.launcher_in_gang(job, launcher_exists)
        built.append(backend.new_pod_group(job, priority_of, launcher_in_gang=in_gang))
    return built


@settings(max_examples=SPECS)
@given(specs.mpijobs(max_workers=4), st.sampled_from(BACKENDS), st.booleans())
def test_children_of_random_valid_specs_pass_server_side_dry_run(
    fuzz_namespace: tuple[LocalCluster, str], job: Obj, backend_name: str, launcher_exists: bool
) -> None:
    cluster, namespace = fuzz_namespace
    submitted = copy.deepcopy(job)
    submitted["metadata"] = {k: v for k, v in job["metadata"].items() if k != "uid"} | {
        "namespace": namespace
    }
    stored = dry_run(cluster, namespace, submitted)
    stored["metadata"].setdefault("uid", job["metadata"]["uid"])
    defaulted = set_defaults(stored)
    built = children(defaulted, backend_name, launcher_exists)
    for child in built:
        dry_run(cluster, namespace, child)
    event(f"gang scheduling: {backend_name or 'off'}")
    event(f"children per job: {len(built)}")
