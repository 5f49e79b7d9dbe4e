"""The operator's manifests installed as users install them, minus the Deployment's pod.

kwok runs no containers, so the Deployment runs no replicas and tests and benchmarks run the same command
as a local process, authenticated with the manifests' ServiceAccount.
"""

from __future__ import annotations

from pathlib import Path

import yaml

from mpioperator.testing.cluster import LocalCluster, wait_crd_established
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
