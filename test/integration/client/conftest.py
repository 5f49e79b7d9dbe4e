"""The SDK and the CLI against a real API server serving the MPIJob CRD; no operator runs, so where a test
needs a status or a pod, it writes them as the operator and the kubelet would."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from mpioperator.client import AsyncMPIJobClient
from mpioperator.testing.cluster import LocalCluster, wait_crd_established

REPO = Path(__file__).resolve().parents[3]
CRD_FILE = REPO / "manifests" / "base" / "kubeflow.org_mpijobs.yaml"
CLI = Path(sys.executable).parent / "kubectl-mpijob"


@pytest.fixture(scope="session")
def served(apiserver_cluster: LocalCluster) -> LocalCluster:
    apiserver_cluster.kubectl("apply", "--server-side", "-f", str(CRD_FILE))
    wait_crd_established(apiserver_cluster, "mpijobs.kubeflow.org")
    return apiserver_cluster


@pytest.fixture
def ns(served: LocalCluster, make_namespace: Any) -> str:
    name: str = make_namespace(served)
    return name


@pytest.fixture
async def sdk(served: LocalCluster, ns: str) -> AsyncIterator[AsyncMPIJobClient]:
    client = AsyncMPIJobClient.from_kubeconfig(served.kubeconfig, namespace=ns)
    yield client
    await client.close()


def set_status(
    cluster: LocalCluster, ns: str, name: str, conditions: list[tuple[str, str]], **extra: Any
) -> None:
    """Write the job's status as the operator would (Created, Running, ... with reasons and messages)."""
    path = f"/apis/kubeflow.org/v2beta1/namespaces/{ns}/mpijobs/{name}"
    job = cluster.rest.get(path)
    job["status"] = {
        "conditions": [
            {
                "type": cond_type,
                "status": status,
                "reason": f"MPIJob{cond_type}",
                "message": f"MPIJob {ns}/{name} is {cond_type.lower()}.",
                "lastTransitionTime": "2026-01-01T00:00:00Z",
                "lastUpdateTime": "2026-01-01T00:00:00Z",
            }
            for cond_type, status in conditions
        ],
        "replicaStatuses": {},
        **extra,
    }
    cluster.rest.request("PUT", f"{path}/status", job)


def kubeconfig_with_namespace(cluster: LocalCluster, namespace: str, path: Path) -> Path:
    """The admin kubeconfig whose current context sets `namespace`, as `kubectl config set-context` would."""
    config = yaml.safe_load(cluster.kubeconfig.read_text())
    current = config["current-context"]
    for context in config["contexts"]:
        if context["name"] == current:
            context["context"]["namespace"] = namespace
    path.write_text(yaml.safe_dump(config))
    return path


def run_cli(
    cluster: LocalCluster, *args: str, kubeconfig: Path | None = None
) -> subprocess.CompletedProcess[str]:
    """`kubectl-mpijob` as a process, finding its kubeconfig in $KUBECONFIG as a user's shell would give it."""
    env = {k: v for k, v in os.environ.items() if k != "KUBECONFIG"}
    env["KUBECONFIG"] = str(kubeconfig or cluster.kubeconfig)
    return subprocess.run(
        [str(CLI), *args], capture_output=True, text=True, env=env, check=False, timeout=120
    )
