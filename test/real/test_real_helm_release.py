"""The Helm chart on the real node: `helm install` runs the operator's image (pulled from the local registry)
as two leader-elected pods, which run pi with real MPI; `helm upgrade` rolls them to one replica with
other flags, which runs pi again; `helm uninstall` leaves nothing of the release behind (its Lease included).

The session's CRD comes from the kustomize install (the other real tests need it), so this release leaves
the CRD out; test/e2e/test_helm_release.py covers a release that brings its own CRD.
"""

from __future__ import annotations

import urllib.request
from pathlib import Path
from typing import Any

import pytest

from mpioperator.testing.cluster import LocalCluster
from mpioperator.testing.helm import Helm, find_helm, release_leftovers
from mpioperator.testing.install import lease_holder
from mpioperator.testing.jobs import Job
from mpioperator.testing.wait import wait_for
from test.real.test_real_mpijobs import (
    assert_pi_ran_where_the_hostfile_says,
    launcher_log,
    pi_job,
    run_to_success,
)

pytestmark = pytest.mark.timeout(900)

RELEASE = "real"
NAMESPACE = "mpi-helm"
DEPLOYMENT = f"/apis/apps/v1/namespaces/{NAMESPACE}/deployments/{RELEASE}-mpi-operator"
SELECTOR = f"app.kubernetes.io/instance={RELEASE}"


def rolled_out(cluster: LocalCluster, replicas: int) -> bool:
    """The Deployment's current generation has `replicas` Ready pods and no old ones left."""
    deployment = cluster.rest.get(DEPLOYMENT)
    status = deployment.get("status") or {}
    pods = cluster.rest.get(f"/api/v1/namespaces/{NAMESPACE}/pods?labelSelector={SELECTOR}")["items"]
    return bool(
        status.get("observedGeneration") == deployment["metadata"]["generation"]
        and status.get("updatedReplicas", 0) == replicas
        and status.get("readyReplicas", 0) == replicas
        and len(pods) == replicas
    )


def operator_pods(cluster: LocalCluster) -> list[dict[str, Any]]:
    return list(cluster.rest.get(f"/api/v1/namespaces/{NAMESPACE}/pods?labelSelector={SELECTOR}")["items"])


def metric(pod: dict[str, Any], name: str) -> float | None:
    """One unlabelled sample from the pod's /metrics (the chart's metrics port), None if absent."""
    with urllib.request.urlopen(f"http://{pod['status']['podIP']}:9090/metrics", timeout=5) as answer:
        for line in answer.read().decode().splitlines():
            if line.startswith(f"{name} "):
                return float(line.split()[1])
    return None


def container_args(cluster: LocalCluster) -> list[str]:
    deployment = cluster.rest.get(DEPLOYMENT)
    return list(deployment["spec"]["template"]["spec"]["containers"][0]["args"])


def test_helm_install_runs_pi_in_real_pods_upgrade_rolls_them_uninstall_leaves_nothing(
    real_cluster: LocalCluster, make_namespace: Any, tmp_path: Path
) -> None:
    helm = Helm(find_helm(), kubeconfig=real_cluster.kubeconfig, home=tmp_path / "helm")
    real_cluster.kubectl("create", "namespace", NAMESPACE)
    installed = False
    try:
        helm.install(RELEASE, NAMESPACE, {"crds": {"install": False}})
        installed = True
        wait_for(lambda: rolled_out(real_cluster, 2), timeout=240, what="2 operator pods Ready")
        holder = wait_for(lambda: lease_holder(real_cluster, NAMESPACE), timeout=60, what="a leader")
        assert holder is not None
        pods = {p["metadata"]["name"]: p for p in operator_pods(real_cluster)}
        leader = holder.split("_")[0]  # `<hostname>_<uuid>`, and a pod's hostname is its name
        assert leader in pods, (holder, sorted(pods))
        assert (
            wait_for(lambda: metric(pods[leader], "mpi_operator_is_leader"), timeout=30, what="leader") == 1
        )

        ns = make_namespace(real_cluster)
        run_to_success(Job(real_cluster, ns, "pi-installed"), pi_job("pi-installed", workers=2, ranks=2))
        assert_pi_ran_where_the_hostfile_says(
            real_cluster, ns, "pi-installed", launcher_log(real_cluster, ns, "pi-installed"), ranks=2
        )

        helm.install(
            RELEASE, NAMESPACE, {"crds": {"install": False}, "replicas": 1, "logVerbosity": 4}, upgrade=True
        )
        wait_for(lambda: rolled_out(real_cluster, 1), timeout=240, what="the upgrade rolled out to 1 pod")
        assert "--v=4" in container_args(real_cluster)
        (pod,) = operator_pods(real_cluster)
        wait_for(lambda: metric(pod, "mpi_operator_is_leader"), timeout=90, what="the new pod to lead")
        run_to_success(Job(real_cluster, ns, "pi-upgraded"), pi_job("pi-upgraded", workers=2, ranks=2))
        assert_pi_ran_where_the_hostfile_says(
            real_cluster, ns, "pi-upgraded", launcher_log(real_cluster, ns, "pi-upgraded"), ranks=2
        )

        objects = helm.manifest(RELEASE, NAMESPACE)
        assert {"Deployment", "Lease", "Service", "ClusterRole"} <= {o["kind"] for o in objects}
        helm.uninstall(RELEASE, NAMESPACE)
        installed = False
        wait_for(
            lambda: operator_pods(real_cluster),
            timeout=120,
            what="operator pods gone",
            done=lambda p: p == [],
        )
        assert release_leftovers(real_cluster, RELEASE, objects) == []
    finally:
        if installed:
            helm.run("uninstall", RELEASE, "--namespace", NAMESPACE, check=False)
        real_cluster.kubectl("delete", "namespace", NAMESPACE, "--wait=false", check=False)
