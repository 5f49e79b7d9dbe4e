"""The apiserver tier is a real etcd + kube-apiserver: compaction expires watches, restarts keep data."""

from __future__ import annotations

from mpioperator.testing.cluster import UNCACHED_RESOURCE, LocalCluster, NamespaceFactory
from mpioperator.testing.rest import RestError


def _pod_template(name: str, revision: int) -> dict[str, object]:
    return {
        "metadata": {"name": name, "labels": {"revision": str(revision)}},
        "template": {"spec": {"containers": [{"name": "c", "image": "busybox"}]}},
    }


def _first_event(cluster: LocalCluster, path: str) -> dict[str, object]:
    try:
        return next(iter(cluster.rest.watch(path, timeout=10)))
    except RestError as err:
        # Some apiserver paths refuse the watch with an HTTP status instead of an ERROR event.
        return {"type": "HTTP", "object": {"code": err.status, "reason": err.reason}}


def test_watch_from_compacted_resource_version_gets_410_expired(
    apiserver_cluster: LocalCluster, make_namespace: NamespaceFactory
) -> None:
    ns = make_namespace(apiserver_cluster)
    rest = apiserver_cluster.rest
    base = f"/api/v1/namespaces/{ns}/{UNCACHED_RESOURCE}"
    created = rest.create(base, _pod_template("tpl", 0))
    old_rv = created["metadata"]["resourceVersion"]
    for revision in range(1, 4):
        rest.merge_patch(f"{base}/tpl", {"metadata": {"labels": {"revision": str(revision)}}})

    before = _first_event(apiserver_cluster, f"{base}?watch=1&resourceVersion={old_rv}&timeoutSeconds=5")
    assert before["type"] == "MODIFIED", "before compaction the old revision is still watchable"

    apiserver_cluster.compact_etcd()
    event = _first_event(apiserver_cluster, f"{base}?watch=1&resourceVersion={old_rv}&timeoutSeconds=5")

    status = event["object"]
    assert isinstance(status, dict)
    assert event["type"] in ("ERROR", "HTTP")
    assert status["code"] == 410
    assert status["reason"] in ("Expired", "Gone")


def test_apiserver_restart_keeps_stored_objects(
    apiserver_cluster: LocalCluster, make_namespace: NamespaceFactory
) -> None:
    ns = make_namespace(apiserver_cluster)
    rest = apiserver_cluster.rest
    for i in range(5):
        rest.create(
            f"/api/v1/namespaces/{ns}/configmaps", {"metadata": {"name": f"cm-{i}"}, "data": {"i": str(i)}}
        )
    old_pid = apiserver_cluster.component_pid("kube-apiserver")

    apiserver_cluster.restart_apiserver(crash=True)

    assert apiserver_cluster.component_pid("kube-apiserver") != old_pid, "a new apiserver process serves"
    items = rest.get(f"/api/v1/namespaces/{ns}/configmaps")["items"]
    stored = {i["metadata"]["name"]: i["data"]["i"] for i in items if i["metadata"]["name"].startswith("cm-")}
    assert stored == {f"cm-{i}": str(i) for i in range(5)}
