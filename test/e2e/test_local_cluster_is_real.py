"""The full local tier behaves like a real cluster: controllers, scheduler, kwok kubelets, GC, RBAC."""

from __future__ import annotations

from datetime import datetime
from typing import Any

import pytest

from mpioperator.testing.cluster import LocalCluster, NamespaceFactory
from mpioperator.testing.rest import RestError
from mpioperator.testing.simulation import outcome
from mpioperator.testing.wait import wait_for


def _container(name: str = "main") -> dict[str, Any]:
    return {"name": name, "image": "busybox", "command": ["true"]}


def _condition(obj: dict[str, Any], kind: str) -> str | None:
    for cond in obj.get("status", {}).get("conditions") or []:
        if cond.get("type") == kind:
            return str(cond.get("status"))
    return None


def _time(value: str) -> datetime:
    return datetime.fromisoformat(value.replace("Z", "+00:00"))


def test_batch_job_pod_is_created_scheduled_run_and_job_completes(
    full_cluster: LocalCluster, make_namespace: NamespaceFactory
) -> None:
    ns = make_namespace(full_cluster)
    rest = full_cluster.rest
    job = {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": "hello"},
        "spec": {
            "backoffLimit": 0,
            "template": {
                "metadata": {"annotations": outcome(run_for="1s")},
                "spec": {"restartPolicy": "Never", "containers": [_container()]},
            },
        },
    }
    rest.create(f"/apis/batch/v1/namespaces/{ns}/jobs", job)

    done = wait_for(
        lambda: rest.get(f"/apis/batch/v1/namespaces/{ns}/jobs/hello"),
        done=lambda j: _condition(j, "Complete") == "True",
        timeout=60,
        what="Job hello to become Complete",
    )
    assert done["status"]["succeeded"] == 1

    pods = rest.get(f"/api/v1/namespaces/{ns}/pods?labelSelector=job-name%3Dhello")["items"]
    assert len(pods) == 1, "the Job controller created exactly one pod"
    pod = pods[0]
    assert pod["metadata"]["ownerReferences"][0]["kind"] == "Job"
    node = rest.get(f"/api/v1/nodes/{pod['spec']['nodeName']}")
    assert node["metadata"]["annotations"]["kwok.x-k8s.io/node"] == "fake", "bound to a kwok node"
    assert _condition(pod, "PodScheduled") == "True"
    assert pod["status"]["phase"] == "Succeeded"


def test_pod_annotated_to_exit_3_after_2s_ends_failed_with_exit_code_3(
    full_cluster: LocalCluster, make_namespace: NamespaceFactory
) -> None:
    ns = make_namespace(full_cluster)
    rest = full_cluster.rest
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "fails", "annotations": outcome(run_for="2s", exit_code=3)},
        "spec": {"restartPolicy": "Never", "containers": [_container()]},
    }
    rest.create(f"/api/v1/namespaces/{ns}/pods", pod)

    seen_running = wait_for(
        lambda: rest.get(f"/api/v1/namespaces/{ns}/pods/fails"),
        done=lambda p: p.get("status", {}).get("phase") in ("Running", "Failed"),
        timeout=60,
        what="pod fails to start",
    )
    final = wait_for(
        lambda: rest.get(f"/api/v1/namespaces/{ns}/pods/fails"),
        done=lambda p: p.get("status", {}).get("phase") in ("Failed", "Succeeded"),
        timeout=60,
        what="pod fails to end",
    )
    assert seen_running["status"]["phase"] == "Running", "it ran before it ended"
    assert final["status"]["phase"] == "Failed"
    terminated = final["status"]["containerStatuses"][0]["state"]["terminated"]
    assert terminated["exitCode"] == 3
    ran_for = _time(terminated["finishedAt"]) - _time(final["status"]["startTime"])
    assert ran_for.total_seconds() >= 2


def test_deleting_an_owner_cascades_to_its_children(
    full_cluster: LocalCluster, make_namespace: NamespaceFactory
) -> None:
    ns = make_namespace(full_cluster)
    rest = full_cluster.rest
    owner = rest.create(f"/api/v1/namespaces/{ns}/configmaps", {"metadata": {"name": "owner"}})
    owner_ref = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "name": "owner",
        "uid": owner["metadata"]["uid"],
        "controller": True,
    }
    for i in range(3):
        rest.create(
            f"/api/v1/namespaces/{ns}/configmaps",
            {"metadata": {"name": f"child-{i}", "ownerReferences": [owner_ref]}},
        )

    rest.delete(f"/api/v1/namespaces/{ns}/configmaps/owner", {"propagationPolicy": "Background"})

    def children() -> list[str]:
        items = rest.get(f"/api/v1/namespaces/{ns}/configmaps")["items"]
        return [i["metadata"]["name"] for i in items if i["metadata"]["name"].startswith("child-")]

    assert wait_for(children, done=lambda names: not names, timeout=60, what="GC to delete children") == []


def test_service_account_without_role_binding_is_denied(
    full_cluster: LocalCluster, make_namespace: NamespaceFactory
) -> None:
    ns = make_namespace(full_cluster)
    rest = full_cluster.rest
    rest.create(f"/api/v1/namespaces/{ns}/serviceaccounts", {"metadata": {"name": "nobody"}})
    token_request = rest.create(
        f"/api/v1/namespaces/{ns}/serviceaccounts/nobody/token",
        {
            "apiVersion": "authentication.k8s.io/v1",
            "kind": "TokenRequest",
            "spec": {"expirationSeconds": 600},
        },
    )
    as_nobody = type(rest)(
        full_cluster.server, token=token_request["status"]["token"], ca_file=full_cluster.ca_file
    )

    who = as_nobody.create(
        "/apis/authentication.k8s.io/v1/selfsubjectreviews",
        {"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"},
    )
    assert who["status"]["userInfo"]["username"] == f"system:serviceaccount:{ns}:nobody", "authenticated"
    with pytest.raises(RestError) as denied:
        as_nobody.get(f"/api/v1/namespaces/{ns}/pods")
    assert denied.value.status == 403
    assert denied.value.reason == "Forbidden"
