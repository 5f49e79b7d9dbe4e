"""The manifests' own ServiceAccount, holding a real token, may do everything the controller does
and nothing it does not (least privilege)."""

from __future__ import annotations

from typing import Any, NamedTuple

import pytest
import yaml

from mpioperator.testing.cluster import LocalCluster, wait_crd_established
from mpioperator.testing.rest import RestClient, RestError
from mpioperator.testing.wait import wait_for
from test.integration.manifests.conftest import REPO

OPERATOR_NS = "mpi-operator"  # the standalone overlay's namespace, also its --lock-namespace
USER_NS = "team-a"  # any namespace: the controller serves all of them


class Access(NamedTuple):
    verb: str
    resource: str
    group: str = ""
    subresource: str = ""
    namespace: str = USER_NS
    name: str = ""

    def __str__(self) -> str:
        where = f" in {self.namespace}" if self.namespace else ""
        sub = f"/{self.subresource}" if self.subresource else ""
        return f"{self.verb} {self.resource}{sub}.{self.group or 'core'}{where}"


def each(verbs: str, resource: str, group: str = "", **kw: str) -> list[Access]:
    return [Access(verb, resource, group, **kw) for verb in verbs.split()]


# upstream-behaviour.md §2.16 plus what our controller adds: gets after conflicts, the MPIJob delete of
# D5 #12, jobs/status (D5 #10), finalizers for blockOwnerDeletion, the startup CRD check, and the launcher
# Job's delete (a whole-job restart, debug mode's end), the MPIJob update that adds and removes the exec
# agent's finalizer (removed also by an operator that no longer runs with --exec-agent), and the log of the
# worker that ran a failed rank (its last words, decisions-local L50).
NEEDED: list[Access] = [
    *each("get list watch create delete", "pods"),
    Access("get", "pods", subresource="log"),  # a failed rank's last words; progress and stalls (L49, L50)
    *each("get list watch create update", "services"),
    *each("get list watch create update", "configmaps"),
    *each("get list watch create update", "secrets"),
    *each("get list watch create update delete", "jobs", "batch"),
    Access("update", "jobs", "batch", subresource="status"),
    *each("get list watch update delete", "mpijobs", "kubeflow.org"),
    Access("update", "mpijobs", "kubeflow.org", subresource="status"),
    Access("update", "mpijobs", "kubeflow.org", subresource="finalizers"),
    *each("create patch", "events"),
    *each("create patch", "events", "events.k8s.io"),
    *each("get list watch create update delete", "podgroups", "scheduling.volcano.sh"),
    *each("get list watch create update delete", "podgroups", "scheduling.x-k8s.io"),
    *each("get list watch create delete", "podgroups", "scheduling.k8s.io"),
    *each("get create delete", "workloads", "scheduling.k8s.io"),
    *each("get list watch", "priorityclasses", "scheduling.k8s.io", namespace=""),
    Access(
        "get", "customresourcedefinitions", "apiextensions.k8s.io", namespace="", name="mpijobs.kubeflow.org"
    ),
    *each(
        "get watch create update", "leases", "coordination.k8s.io", namespace=OPERATOR_NS, name="mpi-operator"
    ),
]

NOT_NEEDED: list[Access] = [
    Access("create", "pods", subresource="exec"),
    Access("create", "pods", subresource="attach"),
    Access("update", "pods"),
    Access("patch", "pods"),
    *each("create update patch delete", "nodes", namespace=""),
    *each("create update patch delete", "customresourcedefinitions", "apiextensions.k8s.io", namespace=""),
    Access(
        "get", "customresourcedefinitions", "apiextensions.k8s.io", namespace="", name="other.example.com"
    ),
    *each("create patch", "mpijobs", "kubeflow.org"),
    Access("delete", "secrets"),
    Access("delete", "services"),
    Access("update", "leases", "coordination.k8s.io", namespace="kube-system", name="kube-scheduler"),
    Access("create", "serviceaccounts", subresource="token"),
    Access("escalate", "clusterroles", "rbac.authorization.k8s.io", namespace=""),
    Access("bind", "clusterroles", "rbac.authorization.k8s.io", namespace=""),
    Access("create", "rolebindings", "rbac.authorization.k8s.io"),
    Access("delete", "namespaces", namespace=""),
    Access("create", "queues", "scheduling.volcano.sh"),
    # Kubernetes' Workload API objects are immutable: never updated, and their status is the scheduler's.
    Access("update", "podgroups", "scheduling.k8s.io"),
    Access("update", "workloads", "scheduling.k8s.io"),
    Access("update", "podgroups", "scheduling.k8s.io", subresource="status"),
]


@pytest.fixture(scope="module")
def operator_client(apiserver_cluster: LocalCluster) -> RestClient:
    """A client authenticated with a TokenRequest token of the overlay's mpi-operator ServiceAccount."""
    apiserver_cluster.kubectl(
        "apply", "--server-side", "--force-conflicts", "-k", str(REPO / "manifests/overlays/standalone")
    )
    wait_crd_established(apiserver_cluster, "mpijobs.kubeflow.org")
    request = {
        "apiVersion": "authentication.k8s.io/v1",
        "kind": "TokenRequest",
        "spec": {"expirationSeconds": 3600},
    }
    issued = apiserver_cluster.rest.create(
        f"/api/v1/namespaces/{OPERATOR_NS}/serviceaccounts/mpi-operator/token", request
    )
    return RestClient(
        apiserver_cluster.server, token=issued["status"]["token"], ca_file=apiserver_cluster.ca_file
    )


def allowed(client: RestClient, access: Access) -> bool:
    attributes: dict[str, Any] = {"verb": access.verb, "group": access.group, "resource": access.resource}
    for key in ("subresource", "namespace", "name"):
        if getattr(access, key):
            attributes[key] = getattr(access, key)
    review = client.create(
        "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews",
        {
            "apiVersion": "authorization.k8s.io/v1",
            "kind": "SelfSubjectAccessReview",
            "spec": {"resourceAttributes": attributes},
        },
    )
    return bool(review["status"].get("allowed"))


def test_the_token_authenticates_as_the_manifests_service_account(operator_client: RestClient) -> None:
    review = operator_client.create(
        "/apis/authentication.k8s.io/v1/selfsubjectreviews",
        {"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"},
    )
    assert review["status"]["userInfo"]["username"] == f"system:serviceaccount:{OPERATOR_NS}:mpi-operator"


def test_every_permission_the_controller_uses_is_granted(operator_client: RestClient) -> None:
    missing = [str(access) for access in NEEDED if not allowed(operator_client, access)]
    assert missing == []


def test_permissions_the_controller_does_not_use_are_denied(operator_client: RestClient) -> None:
    excess = [str(access) for access in NOT_NEEDED if allowed(operator_client, access)]
    assert excess == []


def test_the_service_account_really_lists_mpijobs_and_cannot_delete_the_crd(
    apiserver_cluster: LocalCluster, operator_client: RestClient, make_namespace: Any
) -> None:
    ns = make_namespace(apiserver_cluster)
    # A just-established CRD answers 429 until its watch cache is initialised.
    listed = wait_for(
        lambda: operator_client.get(f"/apis/kubeflow.org/v2beta1/namespaces/{ns}/mpijobs"),
        timeout=30,
        what="the mpijobs list as the operator",
    )
    assert listed["kind"] == "MPIJobList"
    with pytest.raises(RestError) as refused:
        operator_client.delete("/apis/apiextensions.k8s.io/v1/customresourcedefinitions/mpijobs.kubeflow.org")
    assert refused.value.status == 403


# manifests/components/exec-agent: what --exec-agent needs besides NEEDED, and what it still does not get.
EXEC_AGENT_NEEDED: list[Access] = [
    Access("create", "pods", subresource="exec"),
    *each("get create", "serviceaccounts"),
    *each("get create update", "roles", "rbac.authorization.k8s.io"),
    *each("get create update delete", "rolebindings", "rbac.authorization.k8s.io"),
]
EXEC_AGENT_NOT_NEEDED: list[Access] = [
    Access("create", "pods", subresource="attach"),
    Access("escalate", "roles", "rbac.authorization.k8s.io"),
    Access("bind", "roles", "rbac.authorization.k8s.io"),
    *each("create update", "clusterroles", "rbac.authorization.k8s.io", namespace=""),
    *each("create update", "clusterrolebindings", "rbac.authorization.k8s.io", namespace=""),
    Access("delete", "roles", "rbac.authorization.k8s.io"),
    Access("create", "serviceaccounts", subresource="token"),
]


def test_the_exec_agent_overlay_grants_what_the_agent_needs_and_no_escalation(
    apiserver_cluster: LocalCluster, operator_client: RestClient
) -> None:
    rendered = apiserver_cluster.kubectl("kustomize", str(REPO / "manifests/overlays/exec-agent")).stdout
    extra = [
        doc
        for doc in yaml.safe_load_all(rendered)
        if doc
        and doc["kind"] in ("ClusterRole", "ClusterRoleBinding")
        and doc["metadata"]["name"] == "mpi-operator-exec-agent"
    ]
    assert len(extra) == 2
    assert not allowed(operator_client, EXEC_AGENT_NEEDED[0])
    apiserver_cluster.kubectl("apply", "--server-side", "-f", "-", input=yaml.safe_dump_all(extra))
    try:
        # The authorizer reads bindings from its informer: wait until the new one is seen.
        wait_for(
            lambda: allowed(operator_client, EXEC_AGENT_NEEDED[0]), timeout=30, what="the exec-agent binding"
        )
        missing = [str(access) for access in EXEC_AGENT_NEEDED if not allowed(operator_client, access)]
        excess = [str(access) for access in EXEC_AGENT_NOT_NEEDED if allowed(operator_client, access)]
        assert (missing, excess) == ([], [])
    finally:
        for doc in extra:
            apiserver_cluster.kubectl(
                "delete", doc["kind"].lower(), doc["metadata"]["name"], "--ignore-not-found"
            )
