"""Pods listed and watched as protobuf give exactly the cached pods JSON gives, on a real kube-apiserver."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator

import pytest

from mpioperator.api.objects import Obj
from mpioperator.controller.pod_cache import POD_CACHE_PROJECTION, POD_FIELDS, slim_pod
from mpioperator.kube import errors
from mpioperator.kube.client import KubeClient
from mpioperator.kube.list_options import ListOptions
from mpioperator.kube.projection import Projection
from mpioperator.kube.protoapi import PROTOBUF, is_protobuf
from mpioperator.kube.protoschema import POD
from mpioperator.kube.protoupb import string
from mpioperator.kube.resources import CONFIG_MAPS, PODS
from mpioperator.testing.cluster import LocalCluster, NamespaceFactory
from mpioperator.testing.varied_pods import make_varied_pods, release_varied_pods

JSON_ONLY = Projection(POD_FIELDS, "Pod")


@pytest.fixture
async def varied(
    client: KubeClient, apiserver_cluster: LocalCluster, make_namespace: NamespaceFactory
) -> AsyncIterator[tuple[str, str]]:
    """A namespace holding the varied pods, and a resourceVersion from before the first was made."""
    ns = make_namespace(apiserver_cluster)
    rv = (await client.list(PODS, ns))["metadata"]["resourceVersion"]
    await make_varied_pods(client, ns)
    yield ns, rv
    await release_varied_pods(client, ns)


async def watched(client: KubeClient, ns: str, rv: str, projection: Projection) -> list[Obj]:
    events: list[Obj] = []
    stream = client.watch(
        PODS, ns, ListOptions(resource_version=rv, timeout_seconds=2, projection=projection)
    )
    async with contextlib.aclosing(stream) as each:
        async for event in each:
            events.append(event)
    return events


async def test_varied_pods_project_the_same_from_the_servers_protobuf_and_json(
    client: KubeClient, varied: tuple[str, str]
) -> None:
    ns, _ = varied
    transport = client._t
    as_proto = await transport.request("GET", PODS.path(ns), accept=PROTOBUF)
    as_json = await transport.request("GET", PODS.path(ns))
    assert is_protobuf(as_proto.headers.get("Content-Type"))
    assert POD_CACHE_PROJECTION.protobuf is not None
    projected = POD_CACHE_PROJECTION.protobuf.list(as_proto.body)
    assert projected == POD_CACHE_PROJECTION.list(as_json.body)
    assert len(projected["items"]) == 5


async def test_the_client_lists_pods_as_protobuf_and_gets_what_a_json_client_gets(
    client: KubeClient, apiserver_cluster: LocalCluster, varied: tuple[str, str]
) -> None:
    ns, _ = varied
    json_client = KubeClient.from_kubeconfig(apiserver_cluster.kubeconfig, protobuf=False)
    try:
        from_json = await json_client.list(PODS, ns, ListOptions(projection=POD_CACHE_PROJECTION))
    finally:
        await json_client.close()
    from_proto = await client.list(PODS, ns, ListOptions(projection=POD_CACHE_PROJECTION))
    assert from_proto == from_json
    assert {pod["kind"] for pod in from_proto["items"]} == {"Pod"}


async def test_a_protobuf_watch_sees_the_same_events_as_a_json_watch(
    client: KubeClient, varied: tuple[str, str]
) -> None:
    ns, rv = varied
    from_proto = await watched(client, ns, rv, POD_CACHE_PROJECTION)
    from_json = await watched(client, ns, rv, JSON_ONLY)
    assert from_proto == [
        {**event, "object": slim_pod(event["object"])} if event["type"] != "BOOKMARK" else event
        for event in from_json
    ]
    assert [event["type"] for event in from_proto].count("ADDED") == 5
    assert any("deletionTimestamp" in event["object"]["metadata"] for event in from_proto)


async def test_protobuf_list_pages_continue_through_every_pod(
    client: KubeClient, varied: tuple[str, str]
) -> None:
    ns, _ = varied
    names: list[str] = []
    token: str | None = None
    while True:
        page = await client.list(
            PODS, ns, ListOptions(limit=2, continue_token=token, projection=POD_CACHE_PROJECTION)
        )
        names += [pod["metadata"]["name"] for pod in page["items"]]
        token = page["metadata"].get("continue")
        if not token:
            break
    assert sorted(names) == ["deleted", "failed", "pending", "running", "succeeded"]


async def test_an_error_answered_in_protobuf_is_a_typed_error(client: KubeClient, ns: str) -> None:
    with pytest.raises(errors.ApiError) as raised:
        await client.list(
            PODS, ns, ListOptions(continue_token="not-a-token", projection=POD_CACHE_PROJECTION)
        )
    assert (raised.value.status, raised.value.reason) == (400, "BadRequest")
    assert "continue" in raised.value.message


async def test_a_protobuf_answer_that_does_not_decode_is_asked_for_again_as_json(
    apiserver_cluster: LocalCluster, make_namespace: NamespaceFactory
) -> None:
    # ConfigMaps come as protobuf too, but a ConfigMapList is not the PodList this projection decodes.
    ns = make_namespace(apiserver_cluster)
    wrong = Projection(
        {"metadata": {"name": None}},
        "ConfigMap",
        message=POD,
        finish=lambda obj: obj,
        from_message=lambda pod: {"metadata": {"name": string(pod.metadata.name)}},
    )
    kube = KubeClient.from_kubeconfig(apiserver_cluster.kubeconfig)
    try:
        await kube.create(CONFIG_MAPS, {"metadata": {"name": "c"}}, ns)
        listed = await kube.list(CONFIG_MAPS, ns, ListOptions(projection=wrong))
        assert [item["metadata"] for item in listed["items"]] == [{"name": "c"}]
        # From now on JSON: a protobuf watch would fail on its first frame, a ConfigMap.
        await kube.create(CONFIG_MAPS, {"metadata": {"name": "d"}}, ns)
        rv = listed["metadata"]["resourceVersion"]
        stream = kube.watch(
            CONFIG_MAPS, ns, ListOptions(resource_version=rv, timeout_seconds=1, projection=wrong)
        )
        async with contextlib.aclosing(stream) as events:
            seen = [(event["type"], event["object"]["metadata"]) async for event in events]
        assert seen == [("ADDED", {"name": "d"})]
    finally:
        await kube.close()
