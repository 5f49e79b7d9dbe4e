"""The operator's manifests installed as users install them, minus the Deployment's pod.

kwok runs no containers, so the Deployment is scaled to zero and tests and benchmarks run the same command
as a local process, authenticated with the manifests' ServiceAccount.
"""

from __future__ import annotations

from pathlib import Path

from mpioperator.testing.cluster import LocalCluster, wait_crd_established
from mpioperator.testing.wait import wait_for

REPO = Path(__file__).resolve().parents[2]
STANDALONE_OVERLAY = REPO / "manifests" / "overlays" / "standalone"
OPERATOR_NAMESPACE = "mpi-operator"
OPERATOR_ACCOUNT = "mpi-operator"


def install_manifests(cluster: LocalCluster, overlay: Path = STANDALONE_OVERLAY) -> None:
    cluster.kubectl("apply", "--server-side", "-k", str(overlay))
    wait_crd_established(cluster, "mpijobs.kubeflow.org")
    cluster.kubectl("-n", OPERATOR_NAMESPACE, "scale", "deployment/mpi-operator", "--replicas=0")
    account = f"/api/v1/namespaces/{OPERATOR_NAMESPACE}/serviceaccounts/{OPERATOR_ACCOUNT}"
    wait_for(
        lambda: cluster.rest.get(account),
        timeout=30,
        what="the operator's ServiceAccount",
    )
