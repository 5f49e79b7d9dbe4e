"""Pods anyone may create do not stop the operator: one whose owner reference kind is not UTF-8 (written as
a protobuf body, which the API server stores as sent) is there when the operator starts and another comes
while it runs, and it still leads and runs an MPIJob beside them."""

from __future__ import annotations

from typing import Any

from mpioperator.testing.cluster import LocalCluster
from mpioperator.testing.jobs import Job
from mpioperator.testing.mpijobs import mpijob
from mpioperator.testing.operator import OperatorProcess
from mpioperator.testing.protobuf_pods import CONTENT_TYPE, owner_reference, pod_body
from mpioperator.testing.wait import WaitTimeout

UID = b"00000000-0000-4000-8000-0000000000ff"


def create_odd_pod(cluster: LocalCluster, ns: str, name: str) -> None:
    # The kind resolves to nothing, so the garbage collector leaves the pod alone.
    owner = owner_reference(b"kubeflow.org/v2beta1", b"MPI\xffJob", b"pi", UID)
    created = cluster.rest.request(
        "POST", f"/api/v1/namespaces/{ns}/pods", pod_body(name, ns, owner=owner), content_type=CONTENT_TYPE
    )
    assert created["metadata"]["ownerReferences"][0]["kind"] == "MPI\ufffdJob"


def test_the_operator_starts_leads_and_runs_a_job_beside_pods_with_non_utf8_owner_kinds(
    installed_cluster: LocalCluster, make_namespace: Any, operator: OperatorProcess
) -> None:
    ns: str = make_namespace(installed_cluster)
    create_odd_pod(installed_cluster, ns, "odd-before-start")
    # Started again, so its first list of pods holds the odd one.
    operator.terminate()
    operator.start()
    operator.wait_ready(timeout=120)
    create_odd_pod(installed_cluster, ns, "odd-while-running")  # reaches it through its watch

    job = Job(installed_cluster, ns, "pi").submit(mpijob("pi", workers=2))
    try:
        job.wait_condition("Running")
    except WaitTimeout as exc:
        raise AssertionError(f"{exc}\noperator log:\n{operator.log_tail(30)}") from None
    pods = installed_cluster.rest.get(f"/api/v1/namespaces/{ns}/pods")["items"]
    assert {"odd-before-start", "odd-while-running"} <= {pod["metadata"]["name"] for pod in pods}
    assert operator.leading()
    assert "intern() argument" not in operator.log_text()
