"""A kubeconfig user's impersonation, against the real API server: the admin (allowed to impersonate)
with `as`, `as-groups` and `as-user-extra` is, to the server, the user it names, as `kubectl auth whoami`
would show, and has that user's permissions (none) on whole answers and watches alike."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from mpioperator.kube import errors
from mpioperator.kube.client import KubeClient
from mpioperator.kube.list_options import ListOptions
from mpioperator.kube.resources import CONFIG_MAPS, Resource
from mpioperator.testing.cluster import LocalCluster, NamespaceFactory

SELF_SUBJECT_REVIEWS = Resource(
    "authentication.k8s.io", "v1", "selfsubjectreviews", "SelfSubjectReview", namespaced=False
)


def impersonating_kubeconfig(cluster: LocalCluster, path: Path) -> Path:
    doc = yaml.safe_load(cluster.kubeconfig.read_text())
    doc["users"][0]["user"].update(
        {
            "as": "jane",
            "as-groups": ["developers", "équipe"],
            "as-user-extra": {"reason": ["on call", "audit"]},
        }
    )
    path.write_text(yaml.safe_dump(doc, allow_unicode=True), encoding="utf-8")
    return path


async def test_the_api_server_sees_the_impersonated_user_its_groups_and_extras(
    apiserver_cluster: LocalCluster, tmp_path: Path
) -> None:
    client = KubeClient.from_kubeconfig(impersonating_kubeconfig(apiserver_cluster, tmp_path / "config"))
    try:
        review = await client.create(
            SELF_SUBJECT_REVIEWS, {"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"}
        )
    finally:
        await client.close()
    user = review["status"]["userInfo"]
    assert user["username"] == "jane"
    # A group outside ASCII arrives as written: the value goes out as UTF-8, as client-go sends it.
    assert {"developers", "équipe"} <= set(user["groups"]) and "system:masters" not in user["groups"]
    assert user["extra"] == {"reason": ["on call", "audit"]}


async def test_the_impersonated_user_has_its_own_permissions_on_calls_and_watches(
    apiserver_cluster: LocalCluster, make_namespace: NamespaceFactory, tmp_path: Path
) -> None:
    ns = make_namespace(apiserver_cluster)
    client = KubeClient.from_kubeconfig(impersonating_kubeconfig(apiserver_cluster, tmp_path / "config"))
    try:
        with pytest.raises(errors.Forbidden, match='"jane"'):
            await client.list(CONFIG_MAPS, ns)
        with pytest.raises(errors.Forbidden, match='"jane"'):
            async for _ in client.watch(
                CONFIG_MAPS, ns, ListOptions(resource_version="0", timeout_seconds=5)
            ):
                pass
    finally:
        await client.close()
