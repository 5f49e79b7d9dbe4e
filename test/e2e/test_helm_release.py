"""The Helm chart's life cycle on a full local cluster: `helm install`, a job run by the operator the release
configures, `helm upgrade` to another set of namespaces, `helm uninstall`, and nothing of the release left.

kwok runs no containers, so (as everywhere in the e2e tier) the operator runs as a local process: with the
release's ServiceAccount token and exactly the arguments of the release's Deployment, read back from the
cluster; an upgrade restarts it with the new ones, as the Deployment's rollout would. test/real runs the
same chart with the operator's image in real pods.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from mpioperator.testing.cluster import LocalCluster, wait_crd_established
from mpioperator.testing.helm import Helm, find_helm, release_leftovers
from mpioperator.testing.jobs import Job
from mpioperator.testing.mpijobs import mpijob
from mpioperator.testing.operator import OperatorProcess
from mpioperator.testing.prometheus import install_monitoring_crds
from mpioperator.testing.wait import wait_for
from test.conftest import _start

pytestmark = pytest.mark.timeout(900)

RELEASE = "mpi"
RELEASE_NS = "mpi-system"
# Ports are chosen per local process; everything else is passed on unchanged.
LOCAL_FLAGS = ("--monitoring-port=", "--health-port=")


@pytest.fixture(scope="module")
def helm_cluster() -> Iterator[LocalCluster]:
    """A cluster without the kustomize install: the release brings the CRD itself."""
    cluster = _start(LocalCluster("full", nodes=2))
    install_monitoring_crds(cluster)
    yield cluster
    cluster.stop()


@pytest.fixture
def helm(helm_cluster: LocalCluster, tmp_path: Path) -> Helm:
    return Helm(find_helm(), kubeconfig=helm_cluster.kubeconfig, home=tmp_path / "helm")


def deployment_args(cluster: LocalCluster) -> tuple[str, ...]:
    deployment = cluster.rest.get(f"/apis/apps/v1/namespaces/{RELEASE_NS}/deployments/{RELEASE}-mpi-operator")
    (container,) = deployment["spec"]["template"]["spec"]["containers"]
    return tuple(arg for arg in container["args"] if not arg.startswith(LOCAL_FLAGS))


def run_release_operator(cluster: LocalCluster, workdir: Path) -> OperatorProcess:
    """The operator as the release's pods would run it (its ServiceAccount, its Deployment's flags)."""
    proc = OperatorProcess(
        cluster,
        service_account=(RELEASE_NS, f"{RELEASE}-mpi-operator"),
        args=deployment_args(cluster),
        workdir=workdir,
    )
    proc.start()
    proc.wait_ready(timeout=90)
    return proc


def run_to_success(cluster: LocalCluster, namespace: str, name: str) -> None:
    job = Job(cluster, namespace, name).submit(mpijob(name, workers=2, launcher_runs_for="2s"))
    job.wait_condition("Succeeded", timeout=180)


def crd_exists(cluster: LocalCluster) -> bool:
    return cluster.rest.exists("/apis/apiextensions.k8s.io/v1/customresourcedefinitions/mpijobs.kubeflow.org")


MONITORING: dict[str, Any] = {
    "metrics": {"serviceMonitor": {"enabled": True}, "podMonitor": {"enabled": True}},
    "prometheusRule": {"enabled": True},
    "dashboard": {"enabled": True},
}


def test_install_run_upgrade_to_more_namespaces_run_uninstall_leaves_nothing(
    helm_cluster: LocalCluster, helm: Helm, make_namespace: Any, tmp_path: Path
) -> None:
    cluster = helm_cluster
    cluster.kubectl("create", "namespace", RELEASE_NS)
    team_a, team_b = make_namespace(cluster), make_namespace(cluster)
    operator: OperatorProcess | None = None
    try:
        helm.install(
            RELEASE, RELEASE_NS, {"watchNamespaces": [team_a], "crds": {"keep": False}, **MONITORING}
        )
        wait_crd_established(cluster, "mpijobs.kubeflow.org")
        first = helm.manifest(RELEASE, RELEASE_NS)
        assert f"--namespace={team_a}" in deployment_args(cluster)
        operator = run_release_operator(cluster, tmp_path / "operator-1")
        run_to_success(cluster, team_a, "before-upgrade")
        # team_b is not served yet: a job there is left alone.
        outside = Job(cluster, team_b, "outside").submit(mpijob("outside", workers=1, launcher_runs_for="2s"))

        helm.install(
            RELEASE,
            RELEASE_NS,
            {"watchNamespaces": [team_a, team_b], "crds": {"keep": False}, "threadiness": 4, **MONITORING},
            upgrade=True,
        )
        assert [r["revision"] for r in helm.history(RELEASE, RELEASE_NS)] == [1, 2]
        assert (outside.get() or {}).get("status") is None
        args = deployment_args(cluster)
        assert f"--namespace={team_a},{team_b}" in args
        assert "--threadiness=4" in args
        operator.terminate()  # the rollout: new pods with the new flags
        operator = run_release_operator(cluster, tmp_path / "operator-2")
        outside.wait_condition("Succeeded", timeout=180)
        run_to_success(cluster, team_b, "after-upgrade")
        second = helm.manifest(RELEASE, RELEASE_NS)
        assert {(o["kind"], o["metadata"].get("namespace")) for o in second} > {
            (o["kind"], o["metadata"].get("namespace")) for o in first
        }

        operator.terminate()  # the Deployment's pods go with it
        operator = None
        helm.uninstall(RELEASE, RELEASE_NS)
        assert release_leftovers(cluster, RELEASE, first + second) == []
        assert helm.releases(RELEASE_NS) == []
        # crds.keep false: the CRD went with the release, and the MPIJobs with it.
        wait_for(lambda: not crd_exists(cluster), timeout=60, what="the MPIJob CRD deleted")
    finally:
        if operator is not None:
            operator.terminate()
        cluster.kubectl("delete", "namespace", RELEASE_NS, "--wait=false", check=False)


def test_uninstall_keeps_only_the_crd_by_default(helm_cluster: LocalCluster, helm: Helm) -> None:
    cluster = helm_cluster
    namespace = "mpi-keep"
    cluster.kubectl("create", "namespace", namespace)
    try:
        helm.install("keep", namespace)
        wait_crd_established(cluster, "mpijobs.kubeflow.org")
        objects = helm.manifest("keep", namespace)
        helm.uninstall("keep", namespace)
        crd = "customresourcedefinition.apiextensions.k8s.io/mpijobs.kubeflow.org"
        assert release_leftovers(cluster, "keep", objects) == [f"{crd} in the cluster", f"{crd} (labelled)"]
    finally:
        cluster.kubectl("delete", "crd", "mpijobs.kubeflow.org", "--ignore-not-found", check=False)
        cluster.kubectl("delete", "namespace", namespace, "--wait=false", check=False)
