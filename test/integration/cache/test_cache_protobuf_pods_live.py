"""The operator's pod informer fed by protobuf lists and watches (upb, straight into slim pods) holds exactly
what a JSON-fed informer that slims each projected pod holds."""

from __future__ import annotations

import asyncio
from dataclasses import replace

from mpioperator.api.objects import Obj
from mpioperator.cache.informer import SharedInformer
from mpioperator.cache.reflector import DEFAULT_OPTIONS
from mpioperator.controller.pod_cache import POD_CACHE_PROJECTION, POD_FIELDS, slim_pod
from mpioperator.kube.client import KubeClient
from mpioperator.kube.projection import Projection
from mpioperator.kube.resources import PODS
from mpioperator.testing.cluster import LocalCluster, NamespaceFactory
from mpioperator.testing.varied_pods import make_varied_pods, release_varied_pods
from mpioperator.testing.wait import async_wait_for

BUSYBOX: Obj = {"containers": [{"name": "main", "image": "busybox"}]}


def by_name(informer: SharedInformer) -> dict[str, Obj]:
    return {pod["metadata"]["name"]: pod for pod in informer.list()}


async def pod_informer(client: KubeClient, ns: str, *, operators: bool) -> SharedInformer:
    if operators:
        informer = SharedInformer(
            client, PODS, ns, options=replace(DEFAULT_OPTIONS, projection=POD_CACHE_PROJECTION)
        )
    else:
        informer = SharedInformer(
            client,
            PODS,
            ns,
            transform=slim_pod,
            options=replace(DEFAULT_OPTIONS, projection=Projection(POD_FIELDS, "Pod")),
        )
    informer.start()
    await asyncio.wait_for(informer.wait_for_sync(), 30)
    return informer


async def test_a_protobuf_fed_pod_informer_holds_what_a_json_fed_one_holds_through_changes(
    apiserver_cluster: LocalCluster, make_namespace: NamespaceFactory
) -> None:
    ns = make_namespace(apiserver_cluster)
    proto_client = KubeClient.from_kubeconfig(apiserver_cluster.kubeconfig, qps=500.0, burst=1000)
    json_client = KubeClient.from_kubeconfig(apiserver_cluster.kubeconfig, protobuf=False)
    informers: list[SharedInformer] = []
    try:
        await make_varied_pods(proto_client, ns)
        informers = [
            await pod_informer(proto_client, ns, operators=True),
            await pod_informer(json_client, ns, operators=False),
        ]
        from_proto, from_json = informers
        assert by_name(from_proto) == by_name(from_json)
        assert len(by_name(from_proto)) == 5

        # Changes after the list arrive through the watch.
        await proto_client.patch(PODS, "running", {"metadata": {"labels": {"new": "label"}}}, ns)
        await proto_client.create(PODS, {"metadata": {"name": "late"}, "spec": BUSYBOX}, ns)
        await release_varied_pods(proto_client, ns)  # the deleted pod goes for good

        async def caught_up() -> bool:
            pods = by_name(from_proto)
            return "late" in pods and "deleted" not in pods and "new" in pods["running"]["metadata"]["labels"]

        await async_wait_for(caught_up, timeout=30, what="the protobuf-fed informer to see the changes")

        async def agree() -> bool:
            return by_name(from_json) == by_name(from_proto)

        await async_wait_for(agree, timeout=30, what="both informers to agree")
    finally:
        for informer in informers:
            await informer.stop()
        await proto_client.close()
        await json_client.close()


async def test_the_pod_cache_holds_the_node_a_pod_is_bound_to_and_its_disruption_from_both_encodings(
    apiserver_cluster: LocalCluster, make_namespace: NamespaceFactory
) -> None:
    ns = make_namespace(apiserver_cluster)
    proto_client = KubeClient.from_kubeconfig(apiserver_cluster.kubeconfig)
    json_client = KubeClient.from_kubeconfig(apiserver_cluster.kubeconfig, protobuf=False)
    informers: list[SharedInformer] = []
    try:
        await proto_client.create(
            PODS, {"metadata": {"name": "bound"}, "spec": {**BUSYBOX, "nodeName": "node-c"}}, ns
        )
        disrupted = {
            "type": "DisruptionTarget",
            "status": "True",
            "reason": "DeletionByTaintManager",
            "message": "Taint manager: deleting due to NoExecute taint",
        }
        await proto_client.patch(
            PODS, "bound", {"status": {"conditions": [disrupted]}}, ns, subresource="status"
        )
        informers = [
            await pod_informer(proto_client, ns, operators=True),
            await pod_informer(json_client, ns, operators=False),
        ]
        for informer in informers:
            pod = by_name(informer)["bound"]
            assert pod.get("spec") == {"nodeName": "node-c"}, pod
            assert disrupted in pod["status"]["conditions"], pod
    finally:
        for informer in informers:
            await informer.stop()
        await proto_client.close()
        await json_client.close()
