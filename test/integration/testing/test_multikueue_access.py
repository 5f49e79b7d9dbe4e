"""The kubeconfig a MultiKueue manager gets for a worker works against a real API server on its own: the CA
and the token it carries inline verify and authenticate, and RBAC gives it MultiKueue's rights, no more."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
import yaml

from mpioperator.testing.cluster import LocalCluster
from mpioperator.testing.multikueue import worker_kubeconfig


def _allowed(cluster: LocalCluster, kubeconfig: Path, verb: str, group: str, resource: str) -> bool:
    """Asked as the kubeconfig's user, through kubectl (a Go client, as Kueue is); a review names its
    group and resource, so the kinds need not be served here."""
    kind, _, subresource = resource.partition("/")
    review = {
        "apiVersion": "authorization.k8s.io/v1",
        "kind": "SelfSubjectAccessReview",
        # No namespace: every namespace, as MultiKueue copies jobs into whichever they came from.
        "spec": {
            "resourceAttributes": {"verb": verb, "group": group, "resource": kind, "subresource": subresource}
        },
    }
    result = subprocess.run(
        [
            cluster.binaries.path("kubectl"),
            f"--kubeconfig={kubeconfig}",
            "create",
            "--validate=false",
            "-f",
            "-",
            "-o",
            "json",
        ],
        input=json.dumps(review),
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
        env={"HOME": str(kubeconfig.parent)},
    )
    # --validate=false: kubectl's schema check would list CRDs, which this identity may not.
    # A refused certificate or token fails here, not as "not allowed".
    assert result.returncode == 0, result.stderr
    return bool(json.loads(result.stdout)["status"].get("allowed"))


@pytest.fixture(scope="module")
def kubeconfig(apiserver_cluster: LocalCluster, tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("multikueue") / "kubeconfig"
    path.write_text(yaml.safe_dump(worker_kubeconfig(apiserver_cluster)))
    return path


@pytest.mark.parametrize(
    ("verb", "group", "resource", "allowed"),
    [
        ("create", "kubeflow.org", "mpijobs", True),
        ("watch", "kubeflow.org", "mpijobs", True),
        ("delete", "kubeflow.org", "mpijobs", True),
        ("get", "kubeflow.org", "mpijobs/status", True),
        ("update", "kubeflow.org", "mpijobs", False),
        ("create", "kueue.x-k8s.io", "workloads", True),
        ("update", "kueue.x-k8s.io", "workloads/status", True),
        ("create", "", "pods", False),
        ("get", "", "secrets", False),
    ],
)
def test_worker_kubeconfig_authenticates_with_inline_credentials_and_multikueues_rights(
    apiserver_cluster: LocalCluster, kubeconfig: Path, verb: str, group: str, resource: str, allowed: bool
) -> None:
    assert _allowed(apiserver_cluster, kubeconfig, verb, group, resource) is allowed
