"""A pod whose owner reference kind is not UTF-8, created with a protobuf body on a real API server (which
stores the bytes as sent), is read from protobuf lists and watches as the server's JSON shows it, and the
pod informer still syncs."""

from __future__ import annotations

import asyncio
from dataclasses import replace

from mpioperator.api.objects import Obj
from mpioperator.cache.informer import SharedInformer
from mpioperator.cache.reflector import DEFAULT_OPTIONS
from mpioperator.controller.pod_cache import POD_CACHE_PROJECTION
from mpioperator.kube.client import KubeClient
from mpioperator.kube.list_options import ListOptions
from mpioperator.kube.resources import PODS
from mpioperator.testing.cluster import LocalCluster, NamespaceFactory
from mpioperator.testing.protobuf_pods import CONTENT_TYPE, owner_reference, pod_body
from mpioperator.testing.wait import async_wait_for

BAD_KIND = b"MPI\xffJob"
AS_JSON_SHOWS_IT = "MPI\ufffdJob"


async def create_non_utf8_pod(client: KubeClient, ns: str, name: str) -> None:
    owner = owner_reference(b"kubeflow.org/v2beta1", BAD_KIND, b"pi", b"0b0e5a1c-0000-4000-8000-000000000001")
    answer = await client._t.request(
        "POST", PODS.path(ns), body=pod_body(name, ns, owner=owner), content_type=CONTENT_TYPE
    )
    assert answer.status == 201, answer.body[:300]


def owner_kinds(pods: list[Obj]) -> dict[str, list[str]]:
    return {p["metadata"]["name"]: [r["kind"] for r in p["metadata"]["ownerReferences"]] for p in pods}


async def test_a_pod_with_a_non_utf8_owner_kind_lists_from_protobuf_as_the_servers_json_shows_it(
    client: KubeClient, apiserver_cluster: LocalCluster, make_namespace: NamespaceFactory
) -> None:
    ns = make_namespace(apiserver_cluster)
    await create_non_utf8_pod(client, ns, "odd-owner")
    raw_json = await client.get(PODS, "odd-owner", ns)
    assert raw_json["metadata"]["ownerReferences"][0]["kind"] == AS_JSON_SHOWS_IT

    pods = [
        pod
        async for page in client.list_pages(PODS, ns, ListOptions(projection=POD_CACHE_PROJECTION))
        for pod in page["items"]
    ]
    assert owner_kinds(pods) == {"odd-owner": [AS_JSON_SHOWS_IT]}
    json_client = KubeClient.from_kubeconfig(apiserver_cluster.kubeconfig, protobuf=False)
    try:
        from_json = await json_client.list(PODS, ns, ListOptions(projection=POD_CACHE_PROJECTION))
    finally:
        await json_client.close()
    assert pods == from_json["items"]
    # Read as protobuf, not by giving protobuf up for pods.
    assert client._negotiation.protobuf(PODS, POD_CACHE_PROJECTION) is not None


async def test_the_pod_informer_syncs_beside_pods_with_non_utf8_owner_kinds(
    client: KubeClient, ns: str
) -> None:
    await create_non_utf8_pod(client, ns, "listed")
    informer = SharedInformer(
        client, PODS, ns, options=replace(DEFAULT_OPTIONS, projection=POD_CACHE_PROJECTION)
    )
    informer.start()
    try:
        await asyncio.wait_for(informer.wait_for_sync(), 30)
        await create_non_utf8_pod(client, ns, "watched")  # arrives through the protobuf watch

        async def both() -> bool:
            return set(owner_kinds(informer.list())) == {"listed", "watched"}

        await async_wait_for(both, timeout=30, what="the informer to hold both pods")
        assert owner_kinds(informer.list()) == {"listed": [AS_JSON_SHOWS_IT], "watched": [AS_JSON_SHOWS_IT]}
    finally:
        await informer.stop()
