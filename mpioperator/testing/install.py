"""The operator's manifests installed as users install them, minus the Deployment's pod.

kwok runs no containers, so the Deployment runs no replicas and tests and benchmarks run the same command
as a local process, authenticated with the manifests' ServiceAccount.
"""

from __future__ import annotations

from pathlib import Path

import yaml

from mpioperator.testing.cluster import LocalCluster, wait_crd_established
from mpioperator.testing.rest import RestError
from mpioperator.testing.wait import wait_for

REPO = Path(__file__).resolve().parents[2]
STANDALONE_OVERLAY = REPO / "manifests" / "overlays" / "standalone"
OPERATOR_NAMESPACE = "mpi-operator"
OPERATOR_ACCOUNT = "mpi-operator"


def install_manifests(cluster: LocalCluster, overlay: Path = STANDALONE_OVERLAY) -> None:
    """The overlay as `kubectl apply -k` renders it, with the Deployment at zero replicas from the start:
    on a real node its pods would otherwise run, and lead, before a scale-down could stop them."""
    rendered = cluster.kubectl("kustomize", str(overlay)).stdout
    documents = [doc for doc in yaml.safe_load_all(rendered) if doc]
    for doc in documents:
        if doc.get("kind") == "Deployment" and doc["metadata"]["name"] == "mpi-operator":
            doc["spec"]["replicas"] = 0
    cluster.kubectl("apply", "--server-side", "-f", "-", input=yaml.safe_dump_all(documents))
    wait_crd_established(cluster, "mpijobs.kubeflow.org")
    account = f"/api/v1/namespaces/{OPERATOR_NAMESPACE}/serviceaccounts/{OPERATOR_ACCOUNT}"
    wait_for(
        lambda: cluster.rest.get(account),
        timeout=30,
        what="the operator's ServiceAccount",
    )


KUBEFLOW_OVERLAY = REPO / "manifests" / "overlays" / "kubeflow"
LEASE_NAME = "mpi-operator"


def install_deployment(
    cluster: LocalCluster, overlay: Path = STANDALONE_OVERLAY, *, namespace: str = OPERATOR_NAMESPACE
) -> None:
    """The operator as docs/install.md tells users to install it, its Deployment running (a real node only).

    The kubeflow overlay expects its namespace to exist, as upstream's does; standalone brings its own.
    """
    if overlay == KUBEFLOW_OVERLAY:
        cluster.kubectl("create", "namespace", namespace)
    cluster.kubectl("apply", "--server-side", "-k", str(overlay))
    wait_crd_established(cluster, "mpijobs.kubeflow.org")
    wait_deployment_ready(cluster, namespace)


def wait_deployment_ready(
    cluster: LocalCluster, namespace: str, replicas: int = 2, timeout: float = 180
) -> None:
    path = f"/apis/apps/v1/namespaces/{namespace}/deployments/mpi-operator"

    def ready() -> bool:
        status = cluster.rest.get(path).get("status") or {}
        return bool(
            status.get("readyReplicas", 0) == replicas and status.get("updatedReplicas", 0) == replicas
        )

    wait_for(ready, timeout=timeout, what=f"{replicas} mpi-operator replicas Ready in {namespace}")


def lease_holder(cluster: LocalCluster, namespace: str) -> str | None:
    """The identity in the operator's Lease (a pod name when it runs as the Deployment), None if unheld."""
    try:
        lease = cluster.rest.get(f"/apis/coordination.k8s.io/v1/namespaces/{namespace}/leases/{LEASE_NAME}")
    except RestError as err:
        if err.status == 404:
            return None
        raise
    holder = (lease.get("spec") or {}).get("holderIdentity")
    return str(holder) if holder else None
