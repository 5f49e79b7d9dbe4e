"""The install paths users take, applied for real: the one-file install (`deploy/v2beta1/mpi-operator.yaml`)
and the base alone (`kubectl kustomize manifests/base | kubectl apply -f -`, as upstream's docs show).

Each lands every object in its namespace with RBAC subjects pointing there, and the operator, run with the
install's ServiceAccount and the lock namespace its Deployment's pods get, takes the Lease in that
namespace and runs a job to Succeeded. kwok runs no containers, so the operator runs as a local process;
the real tier runs the one-file install's Deployment itself (test/real/test_real_one_file_install.py).

These tests have a cluster of their own: the base install rebinds the cluster-wide ClusterRoleBinding to
its namespace, which would take the session operator's permissions away.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from mpioperator.testing.cluster import LocalCluster, wait_crd_established
from mpioperator.testing.install import LEASE_NAME, lease_holder
from mpioperator.testing.jobs import Job
from mpioperator.testing.mpijobs import mpijob
from mpioperator.testing.operator import OperatorProcess
from mpioperator.testing.wait import wait_for
from test.conftest import _start

REPO = Path(__file__).resolve().parents[2]
ONE_FILE = REPO / "deploy" / "v2beta1" / "mpi-operator.yaml"
BASE = REPO / "manifests" / "base"
ACCOUNT = "mpi-operator"
OPERATOR_DEFAULT_LOCK_NAMESPACE = "mpi-operator"


@pytest.fixture(scope="module")
def bare_cluster() -> Iterator[LocalCluster]:
    cluster = _start(LocalCluster("full", nodes=2))
    yield cluster
    cluster.stop()


def objects_in(cluster: LocalCluster, namespace: str) -> dict[str, Any]:
    get = cluster.rest.get
    rbac = f"/apis/rbac.authorization.k8s.io/v1/namespaces/{namespace}"
    return {
        "serviceaccount": get(f"/api/v1/namespaces/{namespace}/serviceaccounts/{ACCOUNT}"),
        "role": get(f"{rbac}/roles/mpi-operator-leader-election"),
        "rolebinding": get(f"{rbac}/rolebindings/mpi-operator-leader-election"),
        "deployment": get(f"/apis/apps/v1/namespaces/{namespace}/deployments/mpi-operator"),
    }


def cluster_binding_subjects(cluster: LocalCluster) -> list[dict[str, Any]]:
    binding = cluster.rest.get("/apis/rbac.authorization.k8s.io/v1/clusterrolebindings/mpi-operator")
    return list(binding["subjects"])


_REFERENCE = re.compile(r"\$\(([A-Za-z_][A-Za-z0-9_]*)\)")


def args_as_the_kubelet_expands_them(pod: dict[str, Any]) -> list[str]:
    """The container's args with $(VAR) replaced from its env, values and downward-API fields alike."""
    container = pod["spec"]["containers"][0]
    env: dict[str, str] = {}
    for var in container.get("env") or ():
        if "value" in var:
            env[var["name"]] = var["value"]
        field = ((var.get("valueFrom") or {}).get("fieldRef") or {}).get("fieldPath")
        if field == "metadata.namespace":
            env[var["name"]] = pod["metadata"]["namespace"]
        elif field == "metadata.name":
            env[var["name"]] = pod["metadata"]["name"]
    return [_REFERENCE.sub(lambda m: env.get(m.group(1), m.group(0)), arg) for arg in container["args"]]


def lock_namespace_of_a_deployment_pod(cluster: LocalCluster, namespace: str) -> str:
    def a_pod() -> dict[str, Any] | None:
        pods = cluster.rest.get(f"/api/v1/namespaces/{namespace}/pods?labelSelector=app=mpi-operator")[
            "items"
        ]
        return pods[0] if pods else None

    pod = wait_for(a_pod, timeout=60, what=f"a pod of the Deployment in {namespace}")
    assert pod is not None
    locks = [
        a.split("=", 1)[1] for a in args_as_the_kubelet_expands_them(pod) if a.startswith("--lock-namespace=")
    ]
    # Without the flag the operator uses its default, as upstream's does.
    return locks[-1] if locks else OPERATOR_DEFAULT_LOCK_NAMESPACE


def assert_operator_leads_and_runs_a_job(
    cluster: LocalCluster, namespace: str, lock_namespace: str, make_namespace: Any, tmp_path: Path
) -> None:
    operator = OperatorProcess(
        cluster,
        service_account=(namespace, ACCOUNT),
        args=(f"--lock-namespace={lock_namespace}",),
        workdir=tmp_path / "operator",
    )
    operator.start()
    try:
        operator.wait_ready(timeout=90)
        holder = lease_holder(cluster, namespace)
        assert holder, f"no holder of Lease {namespace}/{LEASE_NAME}"
        job_ns = make_namespace(cluster)
        job = Job(cluster, job_ns, "after-install").submit(mpijob("after-install", workers=1))
        job.wait_condition("Succeeded", timeout=120)
    finally:
        operator.terminate()


def assert_installed_in(cluster: LocalCluster, namespace: str, make_namespace: Any, tmp_path: Path) -> None:
    """The install's bindings name the operator's account in `namespace`, its pods take the Lease there,
    and such an operator leads and runs a job."""
    account = [{"kind": "ServiceAccount", "name": ACCOUNT, "namespace": namespace}]
    assert objects_in(cluster, namespace)["rolebinding"]["subjects"] == account
    assert cluster_binding_subjects(cluster) == account
    lock = lock_namespace_of_a_deployment_pod(cluster, namespace)
    assert lock == namespace

    assert_operator_leads_and_runs_a_job(cluster, namespace, lock, make_namespace, tmp_path)


def test_one_file_install_puts_everything_in_mpi_operator_and_its_operator_leads_there(
    bare_cluster: LocalCluster, make_namespace: Any, tmp_path: Path
) -> None:
    result = bare_cluster.kubectl("apply", "--server-side", "-f", str(ONE_FILE), check=False)
    assert result.returncode == 0, result.stderr
    wait_crd_established(bare_cluster, "mpijobs.kubeflow.org")

    assert_installed_in(bare_cluster, "mpi-operator", make_namespace, tmp_path)


def test_base_alone_installs_into_kubeflow_and_its_operator_wins_the_lease_there(
    bare_cluster: LocalCluster, make_namespace: Any, tmp_path: Path
) -> None:
    # The base installs into an existing Kubeflow, as upstream's does: its namespace is not the base's to own.
    bare_cluster.kubectl("create", "namespace", "kubeflow", check=False)
    rendered = bare_cluster.kubectl("kustomize", str(BASE)).stdout
    result = bare_cluster.kubectl("apply", "--server-side", "-f", "-", input=rendered, check=False)
    assert result.returncode == 0, result.stderr
    wait_crd_established(bare_cluster, "mpijobs.kubeflow.org")

    assert objects_in(bare_cluster, "kubeflow")["role"]["metadata"]["namespace"] == "kubeflow"
    # The Lease must live where the leader-election Role grants it: before the fix the base's operator
    # looked for it in mpi-operator, where it may do nothing.
    assert_installed_in(bare_cluster, "kubeflow", make_namespace, tmp_path)
