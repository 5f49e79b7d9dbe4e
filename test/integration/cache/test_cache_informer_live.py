"""Informers against a real kube-apiserver: bursts, etcd compaction, restarts, bookmarks, silent watches."""

from __future__ import annotations

import asyncio
from collections import defaultdict
from collections.abc import AsyncIterator, Callable
from dataclasses import replace

import pytest

from mpioperator.api.objects import Obj
from mpioperator.cache.informer import DeletedFinalStateUnknown, SharedInformer
from mpioperator.cache.keys import object_key
from mpioperator.cache.reflector import DEFAULT_OPTIONS
from mpioperator.kube.client import KubeClient
from mpioperator.kube.projection import KEEP, Projection
from mpioperator.kube.resources import CONFIG_MAPS, Resource
from mpioperator.testing.cluster import LocalCluster, NamespaceFactory
from mpioperator.testing.wait import async_wait_for

# Its watch cache is off in the harness, so a watch from a compacted revision really gets 410.
POD_TEMPLATES = Resource("", "v1", "podtemplates", "PodTemplate")
# What a cache keyed by namespace/name and tracking resourceVersions needs, and nothing of the template.
IDENTITY_ONLY = Projection(
    {"metadata": {"name": KEEP, "namespace": KEEP, "resourceVersion": KEEP, "uid": KEEP}}, "Identity"
)


@pytest.fixture
async def client(apiserver_cluster: LocalCluster) -> AsyncIterator[KubeClient]:
    kube = KubeClient.from_kubeconfig(apiserver_cluster.kubeconfig, qps=1000.0, burst=2000, pool_size=32)
    yield kube
    await kube.close()


class Journal:
    """Every notification per key, as (kind, resourceVersion, was_tombstone)."""

    def __init__(self, informer: SharedInformer) -> None:
        self.by_key: dict[str, list[tuple[str, str, bool]]] = defaultdict(list)
        self.count = 0
        informer.add_event_handler(on_add=self._add, on_update=self._update, on_delete=self._delete)

    def _add(self, obj: Obj) -> None:
        self._note(object_key(obj), "add", obj, False)

    def _update(self, old: Obj, new: Obj) -> None:
        self._note(object_key(new), "update", new, False)

    def _delete(self, obj: Obj | DeletedFinalStateUnknown) -> None:
        if isinstance(obj, DeletedFinalStateUnknown):
            self._note(obj.key, "delete", obj.obj, True)
        else:
            self._note(object_key(obj), "delete", obj, False)

    def _note(self, key: str, kind: str, obj: Obj, tombstone: bool) -> None:
        self.count += 1
        self.by_key[key].append((kind, obj["metadata"]["resourceVersion"], tombstone))

    def changes(self, key: str) -> list[tuple[str, str, bool]]:
        """Notifications without the relist's same-resourceVersion updates (client-go's resyncs)."""
        out: list[tuple[str, str, bool]] = []
        for note in self.by_key[key]:
            if note[0] == "update" and out and out[-1][1] == note[1]:
                continue
            out.append(note)
        return out


def cm(name: str, data: str = "0") -> Obj:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, "data": {"v": data}}


def template(name: str, image: str = "busybox:1") -> Obj:
    container = {"name": "c", "image": image}
    return {"metadata": {"name": name}, "template": {"spec": {"containers": [container]}}}


async def fresh_list(client: KubeClient, res: Resource, namespace: str) -> dict[str, str]:
    body = await client.list(res, namespace)
    return {object_key(i): i["metadata"]["resourceVersion"] for i in body["items"]}


def cached(informer: SharedInformer) -> dict[str, str]:
    return {object_key(o): o["metadata"]["resourceVersion"] for o in informer.list()}


async def converge(
    client: KubeClient, informer: SharedInformer, res: Resource, ns: str, timeout: float
) -> None:
    async def same() -> bool:
        return cached(informer) == await fresh_list(client, res, ns)

    await async_wait_for(same, timeout=timeout, what=f"{res.plural} cache equal to a fresh LIST")


async def eventually(cond: Callable[[], bool], what: str, timeout: float = 30) -> None:
    async def probe() -> bool:
        return cond()

    await async_wait_for(probe, timeout=timeout, what=what)


@pytest.fixture
async def started() -> AsyncIterator[list[SharedInformer]]:
    """Informers a test starts; stopped afterwards whatever happens."""
    informers: list[SharedInformer] = []
    yield informers
    for informer in informers:
        await informer.stop()


async def start(started: list[SharedInformer], informer: SharedInformer) -> SharedInformer:
    started.append(informer)
    informer.start()
    await asyncio.wait_for(informer.wait_for_sync(), 30)
    return informer


async def test_cache_equals_a_fresh_list_after_a_burst_of_2000_writes_seen_in_order(
    ns: str,
    client: KubeClient,
    started: list[SharedInformer],
) -> None:
    informer = await start(started, SharedInformer(client, CONFIG_MAPS, ns))
    journal = Journal(informer)
    expected: dict[str, list[tuple[str, str]]] = {}

    async def life(i: int) -> None:
        # Per object: create, two updates, then either a delete or a third update (4 writes each).
        name = f"cm-{i:03d}"
        key = f"{ns}/{name}"
        obj = await client.create(CONFIG_MAPS, cm(name), ns)
        steps = [("add", obj["metadata"]["resourceVersion"])]
        for n in (1, 2) if i % 2 else (1, 2, 3):
            obj["data"] = {"v": str(n)}
            obj = await client.update(CONFIG_MAPS, obj, ns)
            steps.append(("update", obj["metadata"]["resourceVersion"]))
        if i % 2:
            await client.delete(CONFIG_MAPS, name, ns)
            steps.append(("delete", ""))
        expected[key] = steps

    await asyncio.gather(*(life(i) for i in range(500)))
    await converge(client, informer, CONFIG_MAPS, ns, timeout=120)
    await eventually(lambda: journal.count >= 2000, "2000 notifications", timeout=60)
    assert len(informer.list()) == 250
    for key, steps in expected.items():
        seen = [(kind, rv) for kind, rv, _ in journal.by_key[key]]
        if steps[-1][0] == "delete":
            assert seen[:-1] == steps[:-1], key
            assert seen[-1][0] == "delete", key
            assert int(seen[-1][1]) > int(steps[-2][1]), key
        else:
            assert seen == steps, key
    assert journal.count == 2000
    assert informer.reflector.lists == 1


@pytest.mark.parametrize("projection", [None, IDENTITY_ONLY], ids=["parsed-whole", "projected"])
async def test_relist_after_etcd_compaction_reports_missed_deletes_as_tombstones(
    apiserver_cluster: LocalCluster,
    make_namespace: NamespaceFactory,
    client: KubeClient,
    started: list[SharedInformer],
    projection: Projection | None,
) -> None:
    ns = make_namespace(apiserver_cluster)
    for i in range(6):
        await client.create(POD_TEMPLATES, template(f"t{i}"), ns)
    informer = await start(
        started,
        SharedInformer(client, POD_TEMPLATES, ns, options=replace(DEFAULT_OPTIONS, projection=projection)),
    )
    journal = Journal(informer)
    await eventually(lambda: journal.count == 6, "initial adds")
    watched = await client.create(POD_TEMPLATES, template("watched"), ns)
    await eventually(lambda: f"{ns}/watched" in journal.by_key, "a live watch event")

    await informer.reflector.stop()  # the informer misses everything until resumed
    for name in ("t1", "t2"):
        await client.delete(POD_TEMPLATES, name, ns)
    t3 = await client.get(POD_TEMPLATES, "t3", ns)
    t3["template"]["spec"]["containers"][0]["image"] = "busybox:2"
    t3 = await client.update(POD_TEMPLATES, t3, ns)
    created = [await client.create(POD_TEMPLATES, template(name), ns) for name in ("t6", "t7")]
    apiserver_cluster.compact_etcd()
    informer.reflector.start()

    await converge(client, informer, POD_TEMPLATES, ns, timeout=60)
    assert informer.reflector.lists == 2, "the expired watch must have led to exactly one relist"
    rv = {o["metadata"]["name"]: o["metadata"]["resourceVersion"] for o in [t3, watched, *created]}
    for name in ("t1", "t2"):
        (_, last_seen, _), *_ = journal.changes(f"{ns}/{name}")
        # The tombstone carries the last state the cache had.
        assert journal.changes(f"{ns}/{name}") == [("add", last_seen, False), ("delete", last_seen, True)]
    assert journal.changes(f"{ns}/t3")[1:] == [("update", rv["t3"], False)]
    for name in ("t6", "t7"):
        assert journal.changes(f"{ns}/{name}") == [("add", rv[name], False)], name
    for name in ("t0", "t4", "t5"):
        assert [kind for kind, _, _ in journal.changes(f"{ns}/{name}")] == ["add"], name
    assert journal.changes(f"{ns}/watched") == [("add", rv["watched"], False)]
    assert all(("template" in o) == (projection is None) for o in informer.list())


async def test_an_apiserver_restart_mid_watch_is_survived(
    apiserver_cluster: LocalCluster,
    make_namespace: NamespaceFactory,
    client: KubeClient,
    started: list[SharedInformer],
) -> None:
    ns = make_namespace(apiserver_cluster)
    await client.create(CONFIG_MAPS, cm("before"), ns)
    informer = await start(started, SharedInformer(client, CONFIG_MAPS, ns))
    journal = Journal(informer)
    watches_before = informer.reflector.watches

    await asyncio.to_thread(apiserver_cluster.restart_apiserver)
    await client.create(CONFIG_MAPS, cm("after"), ns)
    before = await client.get(CONFIG_MAPS, "before", ns)
    before["data"] = {"v": "1"}
    await client.update(CONFIG_MAPS, before, ns)

    await converge(client, informer, CONFIG_MAPS, ns, timeout=90)
    assert informer.reflector.watches > watches_before
    assert [kind for kind, _, _ in journal.changes(f"{ns}/after")] == ["add"]
    assert journal.changes(f"{ns}/before")[-1][:2] == ("update", cached(informer)[f"{ns}/before"])


async def test_bookmarks_advance_the_resource_version_without_notifications(
    apiserver_cluster: LocalCluster,
    make_namespace: NamespaceFactory,
    client: KubeClient,
    started: list[SharedInformer],
) -> None:
    # The watch cache sends a bookmark 2 s before a watch's deadline (and about once a minute); short
    # watch timeouts make that happen within seconds. A bookmark only carries a resourceVersion newer
    # than the watch has passed (events filtered out for other namespaces count as passed), so keep
    # writing elsewhere until one arrives.
    watched_ns, busy_ns = make_namespace(apiserver_cluster), make_namespace(apiserver_cluster)
    informer = await start(started, SharedInformer(client, CONFIG_MAPS, watched_ns, min_watch_timeout=3))
    journal = Journal(informer)
    elsewhere = await client.create(CONFIG_MAPS, cm("elsewhere"), busy_ns)
    target = int(elsewhere["metadata"]["resourceVersion"])

    async def bookmarked() -> bool:
        if int(informer.last_sync_resource_version) >= target:
            return True
        touched = await client.get(CONFIG_MAPS, "elsewhere", busy_ns)
        touched["data"] = {"v": str(int(touched["metadata"]["resourceVersion"]))}
        await client.update(CONFIG_MAPS, touched, busy_ns)
        return False

    await async_wait_for(
        bookmarked, timeout=60, interval=1.0, what=f"a bookmark at or past resourceVersion {target}"
    )
    assert journal.count == 0
    assert informer.reflector.lists == 1


async def test_a_silent_watch_is_abandoned_after_the_inactivity_deadline_and_resumed(
    ns: str,
    client: KubeClient,
    started: list[SharedInformer],
) -> None:
    informer = await start(
        started,
        SharedInformer(client, CONFIG_MAPS, ns, options=replace(DEFAULT_OPTIONS, inactivity_timeout=0.5)),
    )
    journal = Journal(informer)
    await eventually(lambda: informer.reflector.watches >= 3, "silent watches replaced")
    created = await client.create(CONFIG_MAPS, cm("late"), ns)
    await eventually(lambda: bool(journal.by_key.get(f"{ns}/late")), "the change")
    assert journal.changes(f"{ns}/late") == [("add", created["metadata"]["resourceVersion"], False)]
    assert informer.reflector.lists == 1, "an inactive watch resumes from its resourceVersion, no relist"
