"""KubeClient watches and throttling against a real kube-apiserver."""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import os
import time

import pytest

from mpioperator.api.objects import Obj
from mpioperator.clock import FakeClock
from mpioperator.kube import errors
from mpioperator.kube.client import KubeClient
from mpioperator.kube.list_options import ListOptions
from mpioperator.kube.ratelimit import ClientLimiters
from mpioperator.kube.resources import CONFIG_MAPS, NAMESPACES, Resource
from mpioperator.testing.cluster import UNCACHED_RESOURCE, LocalCluster, NamespaceFactory
from mpioperator.testing.wait import async_wait_for

# Its watch cache is off in the harness, so a watch from a compacted revision really gets 410.
POD_TEMPLATES = Resource("", "v1", UNCACHED_RESOURCE, "PodTemplate")


def config_map(name: str, data: dict[str, str] | None = None) -> Obj:
    return {"metadata": {"name": name}, "data": data or {}}


def open_sockets() -> set[str]:
    """This process's open sockets ('socket:[inode]'): a watch's connection is one of them while it lives."""
    found = set()
    for fd in os.listdir("/proc/self/fd"):
        with contextlib.suppress(OSError):
            target = os.readlink(f"/proc/self/fd/{fd}")
            if target.startswith("socket:"):
                found.add(target)
    return found


async def current_rv(client: KubeClient, ns: str) -> str:
    rv: str = (await client.list(CONFIG_MAPS, ns))["metadata"]["resourceVersion"]
    return rv


async def watched_and_busy(
    client: KubeClient, cluster: LocalCluster, make_namespace: NamespaceFactory
) -> tuple[str, str, str]:
    """A namespace to watch, its current resourceVersion, and a second namespace whose ConfigMap
    "elsewhere" a test may write to: activity the watch filters out (the bookmark tests)."""
    watched, busy = make_namespace(cluster), make_namespace(cluster)
    rv = await current_rv(client, watched)
    await client.create(CONFIG_MAPS, config_map("elsewhere"), busy)
    return watched, busy, rv


async def test_watch_from_a_resource_version_sees_add_modify_delete_in_order(
    client: KubeClient, ns: str
) -> None:
    rv = await current_rv(client, ns)
    await client.create(CONFIG_MAPS, config_map("w"), ns)
    await client.patch(CONFIG_MAPS, "w", {"data": {"k": "v"}}, ns)
    await client.delete(CONFIG_MAPS, "w", ns)

    seen: list[tuple[str, str, str]] = []
    async with contextlib.aclosing(
        client.watch(
            CONFIG_MAPS, ns, ListOptions(resource_version=rv, timeout_seconds=30, allow_bookmarks=False)
        )
    ) as events:
        async for event in events:
            obj = event["object"]
            seen.append((event["type"], obj["kind"], obj["apiVersion"]))
            if len(seen) == 3:
                break
    assert seen == [
        ("ADDED", "ConfigMap", "v1"),
        ("MODIFIED", "ConfigMap", "v1"),
        ("DELETED", "ConfigMap", "v1"),
    ]


async def test_watch_from_a_compacted_resource_version_raises_expired(
    client: KubeClient, apiserver_cluster: LocalCluster, make_namespace: NamespaceFactory
) -> None:
    ns = make_namespace(apiserver_cluster)
    old = (await client.list(POD_TEMPLATES, ns))["metadata"]["resourceVersion"]
    template = {
        "metadata": {"name": "t"},
        "template": {"spec": {"containers": [{"name": "c", "image": "i"}]}},
    }
    await client.create(POD_TEMPLATES, template, ns)
    await client.patch(POD_TEMPLATES, "t", {"metadata": {"labels": {"x": "y"}}}, ns)
    apiserver_cluster.compact_etcd()

    async def watch_old() -> None:
        async for _ in client.watch(POD_TEMPLATES, ns, ListOptions(resource_version=old, timeout_seconds=10)):
            pass

    with pytest.raises(errors.Expired) as caught:
        await watch_old()
    assert caught.value.status == 410


async def test_bookmarks_arrive_when_requested(
    client: KubeClient, apiserver_cluster: LocalCluster, make_namespace: NamespaceFactory
) -> None:
    # The watch cache sends a bookmark 2 s before a watch's deadline (otherwise about once a minute), so
    # a 5 s watch gets one within seconds. It only sends one carrying progress the watch has not seen,
    # so keep writing in another namespace (filtered out of this watch) while it runs.
    watched, busy, rv = await watched_and_busy(client, apiserver_cluster, make_namespace)

    async def keep_writing() -> None:
        for i in itertools.count():
            await client.patch(CONFIG_MAPS, "elsewhere", {"data": {"i": str(i)}}, busy)
            await asyncio.sleep(0.5)

    bookmarks: list[Obj] = []
    others: list[str] = []
    writer = asyncio.create_task(keep_writing())
    try:
        for _ in range(3):  # a few server-side timeouts at most, in case one passes without a bookmark
            async for event in client.watch(
                CONFIG_MAPS, watched, ListOptions(resource_version=rv, timeout_seconds=5)
            ):
                if event["type"] == "BOOKMARK":
                    bookmarks.append(event["object"])
                    break
                others.append(event["type"])
            if bookmarks:
                break
    finally:
        writer.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await writer
    assert others == []
    assert len(bookmarks) == 1
    # A bookmark is an object of the watched kind with nothing but a resourceVersion that moved on.
    assert bookmarks[0]["kind"] == "ConfigMap"
    assert int(bookmarks[0]["metadata"]["resourceVersion"]) > int(rv)


async def test_bookmarks_are_not_sent_unless_asked_for(
    client: KubeClient, apiserver_cluster: LocalCluster, make_namespace: NamespaceFactory
) -> None:
    watched, _, rv = await watched_and_busy(client, apiserver_cluster, make_namespace)
    events = [
        e
        async for e in client.watch(
            CONFIG_MAPS, watched, ListOptions(resource_version=rv, timeout_seconds=4, allow_bookmarks=False)
        )
    ]
    # The server ended the stream at its timeout without sending anything.
    assert events == []


async def test_a_silent_watch_raises_watch_inactive_after_the_inactivity_timeout(
    client: KubeClient, ns: str
) -> None:
    rv = await current_rv(client, ns)

    async def watch_quiet() -> None:
        async for event in client.watch(
            CONFIG_MAPS,
            ns,
            ListOptions(resource_version=rv, timeout_seconds=60, allow_bookmarks=False, inactivity_timeout=1),
        ):
            raise AssertionError(f"unexpected event {event}")

    started = time.monotonic()
    before = open_sockets()
    with pytest.raises(errors.WatchInactive):
        await watch_quiet()
    # Well before the server's own 60 s deadline.
    assert time.monotonic() - started < 30
    # Its connection is closed, not left for the server's 60 s: the socket goes once TLS has said
    # goodbye, which takes a turn or two of the loop, more on a loaded machine.
    await async_wait_for(
        lambda: asyncio.sleep(0, not open_sockets() - before),
        timeout=10,
        what="the silent watch's connection to close",
    )


async def test_closing_a_watch_early_closes_its_connection(client: KubeClient, ns: str) -> None:
    rv = await current_rv(client, ns)
    await client.create(CONFIG_MAPS, config_map("one"), ns)

    events = client.watch(CONFIG_MAPS, ns, ListOptions(resource_version=rv, timeout_seconds=300))
    first = await anext(events)
    assert first["type"] == "ADDED"
    during = open_sockets()  # the watch's connection among them, new or taken from the pool
    # The connection is quiet now; aclose must close it, not wait for the server's 300 s. The socket
    # itself goes once TLS has said goodbye, a turn or two of the loop later.
    await events.aclose()
    await async_wait_for(
        lambda: asyncio.sleep(0, len(during - open_sockets()) == 1),
        timeout=10,
        what="the watch's connection to close",
    )


async def test_breaking_out_of_a_watch_loop_closes_its_connection(client: KubeClient, ns: str) -> None:
    rv = await current_rv(client, ns)
    await client.create(CONFIG_MAPS, config_map("one"), ns)

    async for _ in client.watch(CONFIG_MAPS, ns, ListOptions(resource_version=rv, timeout_seconds=300)):
        during = open_sockets()
        break
    # A bare break leaves closing to the loop's async-generator finaliser, which runs it as a task.
    await async_wait_for(
        lambda: asyncio.sleep(0, len(during - open_sockets()) == 1),
        timeout=10,
        what="the watch's connection to close",
    )


class CountingMetrics:
    def __init__(self) -> None:
        self.calls: list[tuple[str, str, int]] = []

    def observe(self, verb: str, resource: str, code: int, seconds: float) -> None:
        self.calls.append((verb, resource, code))


async def test_every_verb_but_watch_waits_for_a_token_from_the_qps_limiter(
    apiserver_cluster: LocalCluster, make_namespace: NamespaceFactory
) -> None:
    ns = make_namespace(apiserver_cluster)
    clock = FakeClock(on_sleep="return")  # frozen: every wait is recorded, not slept
    metrics = CountingMetrics()
    limiters = ClientLimiters(10.0, 2, clock=clock)
    kube = KubeClient.from_kubeconfig(apiserver_cluster.kubeconfig, limiters=limiters, metrics=metrics)
    try:
        created = await kube.create(CONFIG_MAPS, config_map("q"), ns)
        await kube.get(CONFIG_MAPS, "q", ns)
        await kube.list(CONFIG_MAPS, ns)
        async for _ in kube.watch(
            CONFIG_MAPS,
            ns,
            ListOptions(resource_version=created["metadata"]["resourceVersion"], timeout_seconds=5),
        ):
            break
        await kube.update(CONFIG_MAPS, created)
        await kube.patch(CONFIG_MAPS, "q", {"data": {"a": "b"}}, ns)
        await kube.delete(CONFIG_MAPS, "q", ns)
    finally:
        await kube.close()
    verbs = [verb for verb, _, _ in metrics.calls]
    assert sorted(verbs) == sorted(["create", "get", "list", "update", "patch", "watch", "delete"])
    assert all(code in (200, 201) for _, _, code in metrics.calls)
    # 6 unary calls, 2 from the burst; the other 4 queued at 10/s behind each other. The watch, sent
    # with the bucket empty, waited for nothing (client-go does not throttle watches).
    assert clock.sleeps == pytest.approx([0.1, 0.2, 0.3, 0.4])
    assert limiters.taken() == {"kube": 6}


async def test_the_qps_limit_bounds_the_request_rate_on_the_real_clock(
    apiserver_cluster: LocalCluster,
) -> None:
    metrics = CountingMetrics()
    kube = KubeClient.from_kubeconfig(apiserver_cluster.kubeconfig, qps=20.0, burst=2, metrics=metrics)
    try:
        started = time.monotonic()
        await asyncio.gather(*(kube.get(NAMESPACES, "default") for _ in range(12)))
        elapsed = time.monotonic() - started
    finally:
        await kube.close()
    assert len(metrics.calls) == 12
    # Two go at once, the other ten need a fresh token each at 20/s: at least 0.5 s, however fast the server.
    assert elapsed >= 10 / 20
