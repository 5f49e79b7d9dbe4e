"""KubeClient's unary verbs against a real kube-apiserver: plain dicts back, typed errors out."""

from __future__ import annotations

import pytest

from mpioperator.api.objects import Obj
from mpioperator.kube import errors
from mpioperator.kube.client import KubeClient
from mpioperator.kube.list_options import ListOptions
from mpioperator.kube.resources import CONFIG_MAPS, JOBS, NAMESPACES, SERVICES
from mpioperator.testing.cluster import LocalCluster


def config_map(name: str, data: dict[str, str] | None = None, labels: dict[str, str] | None = None) -> Obj:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name, "labels": labels or {}},
        "data": data or {},
    }


async def test_config_map_crud_round_trips_plain_dicts(client: KubeClient, ns: str) -> None:
    created = await client.create(CONFIG_MAPS, config_map("cm", {"a": "1"}), ns)
    assert type(created) is dict
    assert created["metadata"]["namespace"] == ns
    assert created["metadata"]["uid"]

    got = await client.get(CONFIG_MAPS, "cm", ns)
    assert (got["kind"], got["apiVersion"], got["data"]) == ("ConfigMap", "v1", {"a": "1"})

    got["data"]["b"] = "2"
    updated = await client.update(CONFIG_MAPS, got)
    assert updated["data"] == {"a": "1", "b": "2"}
    assert updated["metadata"]["resourceVersion"] != got["metadata"]["resourceVersion"]

    deleted = await client.delete(CONFIG_MAPS, "cm", ns)
    assert type(deleted) is dict
    with pytest.raises(errors.NotFound):
        await client.get(CONFIG_MAPS, "cm", ns)


async def test_get_of_a_missing_object_raises_not_found(client: KubeClient, ns: str) -> None:
    with pytest.raises(errors.NotFound) as caught:
        await client.get(CONFIG_MAPS, "nope", ns)
    assert caught.value.status == 404
    assert caught.value.body["details"]["name"] == "nope"


async def test_creating_twice_raises_already_exists(client: KubeClient, ns: str) -> None:
    await client.create(CONFIG_MAPS, config_map("twice"), ns)
    with pytest.raises(errors.AlreadyExists):
        await client.create(CONFIG_MAPS, config_map("twice"), ns)


async def test_update_with_a_stale_resource_version_raises_conflict(client: KubeClient, ns: str) -> None:
    stale = await client.create(CONFIG_MAPS, config_map("cm", {"v": "0"}), ns)
    fresh = dict(stale, data={"v": "1"})
    await client.update(CONFIG_MAPS, fresh)
    with pytest.raises(errors.Conflict):
        await client.update(CONFIG_MAPS, dict(stale, data={"v": "2"}))


async def test_an_invalid_object_raises_invalid_naming_the_field(client: KubeClient, ns: str) -> None:
    with pytest.raises(errors.Invalid) as caught:
        await client.create(CONFIG_MAPS, config_map("Not_A_DNS_Name"), ns)
    assert caught.value.status == 422
    assert "metadata.name" in caught.value.message
    assert [c["field"] for c in caught.value.body["details"]["causes"]] == ["metadata.name"]


async def test_patch_types_merge_strategic_json_and_apply(client: KubeClient, ns: str) -> None:
    svc = {
        "metadata": {"name": "svc"},
        "spec": {"selector": {"app": "x"}, "ports": [{"name": "a", "port": 80}]},
    }
    await client.create(SERVICES, svc, ns)
    # Strategic merge merges the ports list by its "port" key; a merge patch would replace it.
    patched = await client.patch(
        SERVICES, "svc", {"spec": {"ports": [{"name": "b", "port": 81}]}}, ns, patch_type="strategic"
    )
    assert sorted(p["port"] for p in patched["spec"]["ports"]) == [80, 81]
    patched = await client.patch(SERVICES, "svc", {"spec": {"ports": [{"name": "c", "port": 82}]}}, ns)
    assert [p["port"] for p in patched["spec"]["ports"]] == [82]

    await client.create(CONFIG_MAPS, config_map("cm", {"a": "1"}), ns)
    merged = await client.patch(CONFIG_MAPS, "cm", {"data": {"b": "2"}}, ns, patch_type="merge")
    assert merged["data"] == {"a": "1", "b": "2"}
    ops = [{"op": "remove", "path": "/data/a"}, {"op": "add", "path": "/data/c", "value": "3"}]
    jsoned = await client.patch(CONFIG_MAPS, "cm", ops, ns, patch_type="json")
    assert jsoned["data"] == {"b": "2", "c": "3"}
    applied = await client.patch(
        CONFIG_MAPS,
        "cm",
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cm"}, "data": {"d": "4"}},
        ns,
        patch_type="apply",
        field_manager="kube-client-test",
        force=True,
    )
    assert applied["data"]["d"] == "4"
    managers = {m["manager"] for m in applied["metadata"]["managedFields"]}
    assert "kube-client-test" in managers


async def test_update_status_writes_a_jobs_status_subresource(client: KubeClient, ns: str) -> None:
    job = {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": "j"},
        "spec": {
            "template": {
                "spec": {"restartPolicy": "Never", "containers": [{"name": "c", "image": "busybox"}]}
            }
        },
    }
    created = await client.create(JOBS, job, ns)
    created["status"] = {"active": 1, "startTime": "2026-01-01T00:00:00Z"}
    created["spec"]["parallelism"] = 7
    written = await client.update_status(JOBS, created)
    assert written["status"]["active"] == 1
    stored = await client.get(JOBS, "j", ns)
    assert stored["status"]["active"] == 1
    # The status subresource ignores spec changes.
    assert stored["spec"]["parallelism"] == 1


async def test_list_pages_with_limit_and_continue_and_stamps_items(client: KubeClient, ns: str) -> None:
    names = [f"cm-{i}" for i in range(5)]
    for name in names:
        await client.create(CONFIG_MAPS, config_map(name, labels={"set": "paged"}), ns)

    seen: list[str] = []
    pages = 0
    token: str | None = None
    while True:
        page = await client.list(
            CONFIG_MAPS, ns, ListOptions(label_selector="set=paged", limit=2, continue_token=token)
        )
        pages += 1
        for item in page["items"]:
            assert (item["kind"], item["apiVersion"]) == ("ConfigMap", "v1")
            seen.append(item["metadata"]["name"])
        token = page["metadata"].get("continue")
        if not token:
            break
    assert pages == 3
    assert sorted(seen) == names


async def test_list_items_of_a_grouped_resource_carry_its_api_version(client: KubeClient, ns: str) -> None:
    listed = await client.list(NAMESPACES, None, ListOptions(field_selector=f"metadata.name={ns}"))
    assert [(i["kind"], i["apiVersion"], i["metadata"]["name"]) for i in listed["items"]] == [
        ("Namespace", "v1", ns)
    ]
    jobs = await client.list(JOBS, ns)
    assert jobs["items"] == []
    assert jobs["kind"] == "JobList"


async def test_explicit_host_token_and_ca_reach_the_server(apiserver_cluster: LocalCluster) -> None:
    kube = KubeClient.explicit(
        apiserver_cluster.server, token=apiserver_cluster.token, ca_file=str(apiserver_cluster.ca_file)
    )
    try:
        assert (await kube.get(NAMESPACES, "default"))["metadata"]["name"] == "default"
    finally:
        await kube.close()


async def test_a_wrong_token_raises_unauthorized(apiserver_cluster: LocalCluster) -> None:
    kube = KubeClient.explicit(
        apiserver_cluster.server, token="wrong", ca_file=str(apiserver_cluster.ca_file)
    )
    try:
        with pytest.raises(errors.Unauthorized):
            await kube.get(NAMESPACES, "default")
    finally:
        await kube.close()
