"""The manifests' ServiceAccount may do everything the controller does, and nothing it does not."""

from __future__ import annotations

import pytest

from mpioperator.testing.cluster import LocalCluster, wait_crd_established
from mpioperator.testing.operator import service_account_token
from mpioperator.testing.rest import RestClient
from test.integration.manifests.conftest import REPO

pytestmark = pytest.mark.integration

NEEDED = [
    ("list", "mpijobs.kubeflow.org", "--all-namespaces"),
    ("watch", "mpijobs.kubeflow.org", "--all-namespaces"),
    ("update", "mpijobs.kubeflow.org/status", "-n=team-a"),
    ("delete", "mpijobs.kubeflow.org", "-n=team-a"),
    ("create", "pods", "-n=team-a"),
    ("delete", "pods", "-n=team-a"),
    ("watch", "pods", "--all-namespaces"),
    ("create", "services", "-n=team-a"),
    ("update", "services", "-n=team-a"),
    ("create", "configmaps", "-n=team-a"),
    ("update", "configmaps", "-n=team-a"),
    ("create", "secrets", "-n=team-a"),
    ("update", "secrets", "-n=team-a"),
    ("list", "secrets", "--all-namespaces"),
    ("create", "jobs.batch", "-n=team-a"),
    ("update", "jobs.batch", "-n=team-a"),
    ("update", "jobs.batch/status", "-n=team-a"),
    ("watch", "jobs.batch", "--all-namespaces"),
    ("create", "events", "-n=team-a"),
    ("patch", "events", "-n=team-a"),
    ("get", "leases.coordination.k8s.io", "-n=mpi-operator"),
    ("create", "leases.coordination.k8s.io", "-n=mpi-operator"),
    ("update", "leases.coordination.k8s.io", "-n=mpi-operator"),
    ("create", "podgroups.scheduling.volcano.sh", "-n=team-a"),
    ("update", "podgroups.scheduling.x-k8s.io", "-n=team-a"),
    ("delete", "podgroups.scheduling.x-k8s.io", "-n=team-a"),
    ("watch", "priorityclasses.scheduling.k8s.io", ""),
    ("get", "customresourcedefinitions.apiextensions.k8s.io", ""),
]

NOT_NEEDED = [
    ("create", "pods/exec", "-n=team-a"),
    ("update", "nodes", ""),
    ("patch", "nodes", ""),
    ("delete", "customresourcedefinitions.apiextensions.k8s.io", ""),
    ("create", "customresourcedefinitions.apiextensions.k8s.io", ""),
    ("update", "pods", "-n=team-a"),
    ("create", "mpijobs.kubeflow.org", "-n=team-a"),
    ("update", "leases.coordination.k8s.io", "-n=kube-system"),
    ("create", "clusterrolebindings.rbac.authorization.k8s.io", ""),
    ("delete", "secrets", "-n=team-a"),
    ("update", "mpijobs.kubeflow.org", "-n=team-a"),
]


@pytest.fixture(scope="module")
def token(apiserver_cluster: LocalCluster) -> str:
    apiserver_cluster.kubectl(
        "apply", "--server-side", "--force-conflicts", "-k", str(REPO / "manifests/overlays/standalone")
    )
    wait_crd_established(apiserver_cluster, "mpijobs.kubeflow.org")
    return service_account_token(apiserver_cluster, "mpi-operator", "mpi-operator")


def can_i(cluster: LocalCluster, token: str, verb: str, resource: str, scope: str) -> str:
    """A SelfSubjectAccessReview as the ServiceAccount: exact about groups and subresources, and it
    does not need the resource (a PodGroup CRD, say) to be installed."""
    name, _, subresource = resource.partition("/")
    plural, _, group = name.partition(".")
    attributes = {"verb": verb, "resource": plural, "group": group, "subresource": subresource}
    if scope.startswith("-n="):
        attributes["namespace"] = scope[3:]
    review = {
        "apiVersion": "authorization.k8s.io/v1",
        "kind": "SelfSubjectAccessReview",
        "spec": {"resourceAttributes": attributes},
    }
    client = RestClient(cluster.server, token=token, ca_file=cluster.ca_file)
    answer = client.create("/apis/authorization.k8s.io/v1/selfsubjectaccessreviews", review)
    return "yes" if answer["status"].get("allowed") else "no"


@pytest.mark.parametrize(("verb", "resource", "scope"), NEEDED, ids=[f"{v} {r}" for v, r, _ in NEEDED])
def test_service_account_may_do_what_the_controller_needs(
    apiserver_cluster: LocalCluster, token: str, verb: str, resource: str, scope: str
) -> None:
    assert can_i(apiserver_cluster, token, verb, resource, scope) == "yes"


@pytest.mark.parametrize(
    ("verb", "resource", "scope"), NOT_NEEDED, ids=[f"{v} {r}" for v, r, _ in NOT_NEEDED]
)
def test_service_account_may_not_do_what_the_controller_never_does(
    apiserver_cluster: LocalCluster, token: str, verb: str, resource: str, scope: str
) -> None:
    assert can_i(apiserver_cluster, token, verb, resource, scope) == "no"
