"""Manifests and examples applied with the real kubectl to a real API server."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from mpioperator.testing.cluster import LocalCluster, wait_crd_established

REPO = Path(__file__).resolve().parents[3]
OVERLAYS = ("kubeflow", "standalone", "dev")
EXAMPLES = sorted((REPO / "examples" / "v2beta1").rglob("*.yaml"))


def stderr_of(result: subprocess.CompletedProcess[str]) -> str:
    return result.stderr + result.stdout


def applied(cluster: LocalCluster, mode: str, *source: str) -> str:
    """`kubectl apply` of `source` (`-f FILE`, `-k DIR`), client-side or server-side (taking the fields
    over: `--force-conflicts`), asserted to succeed; what it printed."""
    args = ["apply", *source]
    if mode == "server-side":
        args += ["--server-side", "--force-conflicts"]
    result = cluster.kubectl(*args, check=False)
    assert result.returncode == 0, result.stderr
    return result.stdout


@pytest.fixture(scope="module")
def crd_cluster(apiserver_cluster: LocalCluster) -> LocalCluster:
    """The API server with the MPIJob CRD applied from the manifests and established."""
    apiserver_cluster.kubectl(
        "apply",
        "--server-side",
        "--force-conflicts",
        "-f",
        str(REPO / "manifests/base/kubeflow.org_mpijobs.yaml"),
    )
    wait_crd_established(apiserver_cluster, "mpijobs.kubeflow.org")
    return apiserver_cluster
