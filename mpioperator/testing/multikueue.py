"""MultiKueue between two local clusters: what a worker grants the manager, and the manager's objects.

The manager's Kueue reads each worker's kubeconfig from a Secret in its own namespace and talks to the
worker as whoever that kubeconfig names. Here that is a ServiceAccount on the worker, bound to a role with
the rights MultiKueue uses there for MPIJobs (Kueue's own setup script grants the same verbs for each
kind it can dispatch), and its bound token is written inline with the worker's CA as data: Kueue refuses
kubeconfigs that name files, skip TLS checks or run exec plugins.
"""

from __future__ import annotations

import base64
import copy
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import yaml

from mpioperator.api.constants import MULTIKUEUE_CONTROLLER
from mpioperator.testing.kueue_manifests import NAMESPACE as KUEUE_NAMESPACE
from mpioperator.testing.kueue_objects import API_VERSION, path
from mpioperator.testing.operator import service_account_token
from mpioperator.testing.pki import inline_kubeconfig
from mpioperator.testing.wait import wait_for

if TYPE_CHECKING:
    from mpioperator.testing.cluster import LocalCluster

WORKER_ACCOUNT = "multikueue"
KUBECONFIG_KEY = "kubeconfig"

_READ = ["get", "list", "watch"]
# What MultiKueue does on a worker: copies the Workload and the MPIJob there, watches both, reads the
# MPIJob's status back, updates the copy's finalizers and status, and deletes both when done.
WORKER_RULES: tuple[dict[str, Any], ...] = (
    {
        "apiGroups": ["kueue.x-k8s.io"],
        "resources": ["workloads"],
        "verbs": ["create", "delete", *_READ, "update", "patch"],
    },
    {"apiGroups": ["kueue.x-k8s.io"], "resources": ["workloads/status"], "verbs": ["get", "update", "patch"]},
    {"apiGroups": ["kueue.x-k8s.io"], "resources": ["clusterqueues", "localqueues"], "verbs": _READ},
    {"apiGroups": ["kubeflow.org"], "resources": ["mpijobs"], "verbs": ["create", "delete", *_READ]},
    {"apiGroups": ["kubeflow.org"], "resources": ["mpijobs/status"], "verbs": ["get"]},
)


def worker_access(*, namespace: str = KUEUE_NAMESPACE, account: str = WORKER_ACCOUNT) -> list[dict[str, Any]]:
    """The worker's side: a ServiceAccount for the manager and a ClusterRole with MultiKueue's rights."""
    role = f"{account}-manager"
    return [
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}},
        {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": account, "namespace": namespace}},
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRole",
            "metadata": {"name": role},
            "rules": [copy.deepcopy(rule) for rule in WORKER_RULES],
        },
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRoleBinding",
            "metadata": {"name": role},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": role},
            "subjects": [{"kind": "ServiceAccount", "name": account, "namespace": namespace}],
        },
    ]


def manager_objects(
    *,
    workers: Mapping[str, Mapping[str, Any]],
    config: str,
    check: str,
    namespace: str = KUEUE_NAMESPACE,
) -> list[dict[str, Any]]:
    """The manager's side for `workers` (cluster name -> its kubeconfig): per worker a Secret and a
    MultiKueueCluster; one MultiKueueConfig listing them, and the AdmissionCheck that uses it. A
    ClusterQueue sends its jobs to the workers once it names `check` among its admission checks."""
    objects: list[dict[str, Any]] = []
    for name, kubeconfig in workers.items():
        secret = f"{name}-kubeconfig"
        encoded = base64.b64encode(yaml.safe_dump(dict(kubeconfig)).encode()).decode()
        objects.append(
            {
                "apiVersion": "v1",
                "kind": "Secret",
                "metadata": {"name": secret, "namespace": namespace},
                "data": {KUBECONFIG_KEY: encoded},
            }
        )
        objects.append(
            {
                "apiVersion": API_VERSION,
                "kind": "MultiKueueCluster",
                "metadata": {"name": name},
                "spec": {"clusterSource": {"kubeConfig": {"locationType": "Secret", "location": secret}}},
            }
        )
    objects.append(
        {
            "apiVersion": API_VERSION,
            "kind": "MultiKueueConfig",
            "metadata": {"name": config},
            "spec": {"clusters": list(workers)},
        }
    )
    objects.append(
        {
            "apiVersion": API_VERSION,
            "kind": "AdmissionCheck",
            "metadata": {"name": check},
            "spec": {
                "controllerName": MULTIKUEUE_CONTROLLER,
                "parameters": {"apiGroup": "kueue.x-k8s.io", "kind": "MultiKueueConfig", "name": config},
            },
        }
    )
    return objects


def is_active(obj: Mapping[str, Any]) -> bool:
    """Kueue's Active condition is True (a MultiKueueCluster connected, a check or queue usable)."""
    found = (obj.get("status") or {}).get("conditions") or ()
    return any(c.get("type") == "Active" and c.get("status") == "True" for c in found)


def _wait_active(cluster: LocalCluster, path: str, what: str, timeout: float) -> None:
    # The whole object is what a timeout shows: its conditions' reasons and messages say why.
    wait_for(lambda: cluster.rest.get(path), timeout=timeout, what=f"{what} Active", done=is_active)


def apply(cluster: LocalCluster, objects: list[dict[str, Any]]) -> None:
    cluster.kubectl("apply", "--server-side", "-f", "-", input=yaml.safe_dump_all(objects))


def worker_kubeconfig(
    worker: LocalCluster, *, namespace: str = KUEUE_NAMESPACE, account: str = WORKER_ACCOUNT
) -> dict[str, object]:
    """Grant the manager's rights on `worker` and return a kubeconfig that carries them inline."""
    apply(worker, worker_access(namespace=namespace, account=account))
    token = service_account_token(worker, namespace, account)
    return inline_kubeconfig(server=worker.server, ca_pem=worker.ca_file.read_bytes(), token=token)


def connect(
    manager: LocalCluster,
    workers: Mapping[str, LocalCluster],
    *,
    config: str = "multikueue",
    check: str = "multikueue",
    timeout: float = 120.0,
) -> list[dict[str, Any]]:
    """Point the manager's Kueue at `workers` (both sides running Kueue already) and wait until it has
    connected to each and the AdmissionCheck is usable. The manager's objects, for deleting them later."""
    kubeconfigs = {name: worker_kubeconfig(worker) for name, worker in workers.items()}
    objects = manager_objects(workers=kubeconfigs, config=config, check=check)
    apply(manager, objects)
    for name in workers:
        _wait_active(manager, path("MultiKueueCluster", name), f"MultiKueueCluster {name}", timeout)
    _wait_active(manager, path("AdmissionCheck", check), f"AdmissionCheck {check}", timeout)
    return objects
