"""The CRD's scale subresource on a real API server (docs/extensions.md, decisions-local L50): `kubectl scale`
sets spec.mpiReplicaSpecs.Worker.replicas, the Scale reads the running workers and their selector from the
status the operator writes, and a scale to no worker is refused by the CRD's own rule."""

from __future__ import annotations

from typing import Any

from mpioperator.testing.cluster import LocalCluster
from mpioperator.testing.mpijobs import mpijob

SELECTOR = "training.kubeflow.org/job-name=elastic,training.kubeflow.org/job-role=worker"


def test_kubectl_scale_sets_the_worker_replicas_and_the_scale_reads_the_status_replicas_and_selector(
    mpijob_crd: LocalCluster, make_namespace: Any
) -> None:
    cluster = mpijob_crd
    ns = make_namespace(cluster)
    path = f"/apis/kubeflow.org/v2beta1/namespaces/{ns}/mpijobs/elastic"
    cluster.rest.create(f"/apis/kubeflow.org/v2beta1/namespaces/{ns}/mpijobs", mpijob("elastic", workers=2))

    scaled = cluster.kubectl("-n", ns, "scale", "mpijob/elastic", "--replicas=3")

    assert "scaled" in scaled.stdout, scaled
    job = cluster.rest.get(path)
    assert job["spec"]["mpiReplicaSpecs"]["Worker"]["replicas"] == 3
    status = {"replicaStatuses": {"Worker": {"active": 2, "selector": SELECTOR}}}
    cluster.rest.request("PUT", f"{path}/status", {**job, "status": status})
    scale = cluster.rest.get(f"{path}/scale")
    assert scale["spec"] == {"replicas": 3}
    assert scale["status"] == {"replicas": 2, "selector": SELECTOR}


def test_a_scale_to_no_worker_is_refused_by_the_crds_rule(
    mpijob_crd: LocalCluster, make_namespace: Any
) -> None:
    cluster = mpijob_crd
    ns = make_namespace(cluster)
    cluster.rest.create(f"/apis/kubeflow.org/v2beta1/namespaces/{ns}/mpijobs", mpijob("elastic", workers=2))

    refused = cluster.kubectl("-n", ns, "scale", "mpijob/elastic", "--replicas=0", check=False)

    assert refused.returncode != 0
    assert "Worker replicas must be greater than or equal to 1" in refused.stderr, refused.stderr
    job = cluster.rest.get(f"/apis/kubeflow.org/v2beta1/namespaces/{ns}/mpijobs/elastic")
    assert job["spec"]["mpiReplicaSpecs"]["Worker"]["replicas"] == 2
