"""The operator deployed as README tells users: its image (built from the project's Dockerfile steps) pulled
from the registry, the kubeflow overlay's Deployment with two replicas behind the Lease, a job run through
it, the leader's pod deleted and the standby taking over, /metrics scraped on the pod's IP."""

from __future__ import annotations

import time
import urllib.request
from typing import Any

from mpioperator.testing.cluster import LocalCluster
from mpioperator.testing.install import (
    KUBEFLOW_OVERLAY,
    install_deployment,
    install_manifests,
    lease_holder,
)
from mpioperator.testing.jobs import Job
from mpioperator.testing.wait import wait_for
from test.real.test_real_mpijobs import (
    assert_pi_ran_where_the_hostfile_says,
    launcher_log,
    pi_job,
    run_to_success,
)

NAMESPACE = "kubeflow"


def operator_pods(cluster: LocalCluster) -> dict[str, dict[str, Any]]:
    pods = cluster.rest.get(f"/api/v1/namespaces/{NAMESPACE}/pods?labelSelector=app=mpi-operator")["items"]
    return {p["metadata"]["name"]: p for p in pods if not p["metadata"].get("deletionTimestamp")}


def leader_pod(cluster: LocalCluster) -> str | None:
    holder = lease_holder(cluster, NAMESPACE)
    # The identity is `<hostname>_<uuid>`, and a pod's hostname is its name.
    return holder.split("_")[0] if holder else None


def is_leader_metric(pod: dict[str, Any]) -> float:
    url = f"http://{pod['status']['podIP']}:9090/metrics"
    with urllib.request.urlopen(url, timeout=5) as answer:
        for line in answer.read().decode().splitlines():
            if line.startswith("mpi_operator_is_leader "):
                return float(line.split()[1])
    raise AssertionError(f"no mpi_operator_is_leader in {url}")


def test_kubeflow_overlay_deployment_runs_a_job_and_its_standby_takes_over(
    real_cluster: LocalCluster, make_namespace: Any
) -> None:
    install_deployment(real_cluster, KUBEFLOW_OVERLAY, namespace=NAMESPACE)
    try:
        first = wait_for(lambda: leader_pod(real_cluster), timeout=60, what="a replica to take the Lease")
        pods = operator_pods(real_cluster)
        assert first in pods and len(pods) == 2, (first, sorted(pods))
        (standby,) = set(pods) - {first}
        assert wait_for(lambda: is_leader_metric(pods[first]), timeout=30, what="leader metric") == 1.0
        assert is_leader_metric(pods[standby]) == 0.0

        ns = make_namespace(real_cluster)
        run_to_success(Job(real_cluster, ns, "before"), pi_job("before", workers=2, ranks=2))
        assert_pi_ran_where_the_hostfile_says(
            real_cluster, ns, "before", launcher_log(real_cluster, ns, "before"), ranks=2
        )

        deleted_at = time.monotonic()
        real_cluster.kubectl("-n", NAMESPACE, "delete", "pod", first, "--wait=false")
        second = wait_for(
            lambda: leader_pod(real_cluster) not in (None, first) and leader_pod(real_cluster),
            timeout=60,
            what="the standby to take the Lease",
        )
        takeover = time.monotonic() - deleted_at
        assert second == standby, (second, standby)
        print(f"standby {standby} took the Lease {takeover:.1f}s after the leader's pod was deleted")

        run_to_success(Job(real_cluster, ns, "after"), pi_job("after", workers=2, ranks=2))
        assert_pi_ran_where_the_hostfile_says(
            real_cluster, ns, "after", launcher_log(real_cluster, ns, "after"), ranks=2
        )
    finally:
        real_cluster.kubectl(
            "-n", NAMESPACE, "delete", "deployment", "mpi-operator", "--wait=true", check=False
        )
        real_cluster.kubectl("delete", "namespace", NAMESPACE, "--wait=false", check=False)
        # The overlays share cluster-scoped RBAC; the session's other tests run with the standalone one.
        install_manifests(real_cluster)
