"""SharedInformer and factory semantics over a scripted source (relists and faults on demand)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import pytest

from mpioperator.api.objects import Obj
from mpioperator.cache.factory import SharedInformerFactory
from mpioperator.cache.informer import DeletedFinalStateUnknown, SharedInformer, strip_managed_fields
from mpioperator.cache.store import CONTROLLER_OWNER_INDEX
from mpioperator.kube.errors import Expired
from mpioperator.kube.resources import CONFIG_MAPS, PODS
from test.unit.cache.cache_fakes import FakeSource, cm, event, settle, sleep_driven_clock, wait


def rv_of(o: Obj) -> str:
    return str(o["metadata"]["resourceVersion"])


class Recorder:
    """A handler that records ("add"|"update"|"delete", name, rv) and whether it was a tombstone."""

    def __init__(self, informer: SharedInformer | None = None) -> None:
        self.seen: list[tuple[str, str, str]] = []
        self.tombstones: list[DeletedFinalStateUnknown] = []
        self.cached_when_notified: list[bool] = []
        self._informer = informer

    def on_add(self, o: Obj) -> None:
        self._record("add", o)

    def on_update(self, old: Obj, new: Obj) -> None:
        self._record("update", new)

    def on_delete(self, o: Obj | DeletedFinalStateUnknown) -> None:
        if isinstance(o, DeletedFinalStateUnknown):
            self.tombstones.append(o)
            o = o.obj
        self.seen.append(("delete", o["metadata"]["name"], rv_of(o)))

    def _record(self, kind: str, o: Obj) -> None:
        self.seen.append((kind, o["metadata"]["name"], rv_of(o)))
        if self._informer is not None:
            cached = self._informer.get("ns", o["metadata"]["name"])
            self.cached_when_notified.append(cached is not None and rv_of(cached) >= rv_of(o))

    def register(self, informer: SharedInformer) -> Any:
        return informer.add_event_handler(
            on_add=self.on_add, on_update=self.on_update, on_delete=self.on_delete
        )


@pytest.fixture
async def source_and_informer() -> AsyncIterator[tuple[FakeSource, SharedInformer]]:
    source = FakeSource([cm("a", "1"), cm("b", "2")], rv="5")
    informer = SharedInformer(source, CONFIG_MAPS, "ns", clock=sleep_driven_clock())
    yield source, informer
    await informer.stop()


async def test_initial_list_is_delivered_as_adds_and_then_the_informer_has_synced(
    source_and_informer: tuple[FakeSource, SharedInformer],
) -> None:
    _source, informer = source_and_informer
    rec = Recorder()
    reg = rec.register(informer)
    assert not informer.has_synced()
    informer.start()
    await asyncio.wait_for(informer.wait_for_sync(), 5)
    assert informer.has_synced()
    await wait(reg.has_synced, "handler synced")
    assert rec.seen == [("add", "a", "1"), ("add", "b", "2")]
    assert informer.list()[0]["kind"] == "ConfigMap"


async def test_the_store_is_written_before_handlers_are_notified(
    source_and_informer: tuple[FakeSource, SharedInformer],
) -> None:
    source, informer = source_and_informer
    rec = Recorder(informer)
    rec.register(informer)
    informer.start()
    stream = await source.watch_number(1)
    stream.send(event("ADDED", cm("c", "6")), event("MODIFIED", cm("a", "7")))
    await wait(lambda: len(rec.seen) == 4, "4 notifications")
    assert rec.cached_when_notified == [True, True, True, True]
    assert rec.seen[2:] == [("add", "c", "6"), ("update", "a", "7")]


async def test_relist_after_expiry_reports_missed_deletes_as_tombstones(
    source_and_informer: tuple[FakeSource, SharedInformer],
) -> None:
    source, informer = source_and_informer
    rec = Recorder()
    rec.register(informer)
    informer.start()
    stream = await source.watch_number(1)
    await wait(lambda: len(rec.seen) == 2, "initial adds")
    # While the watch was gone: a deleted, b updated, c created.
    source.objects, source.rv = [cm("b", "8"), cm("c", "9")], "9"
    stream.fail(Expired(410, "Expired", "too old"))
    await source.watch_number(2)
    await wait(lambda: len(rec.seen) == 5, "relist notifications")
    assert rec.seen[2:] == [("update", "b", "8"), ("add", "c", "9"), ("delete", "a", "1")]
    assert [(t.key, rv_of(t.obj)) for t in rec.tombstones] == [("ns/a", "1")]
    assert sorted(informer.store.keys()) == ["ns/b", "ns/c"]


async def test_relist_reports_unchanged_objects_as_updates_with_equal_resource_versions(
    source_and_informer: tuple[FakeSource, SharedInformer],
) -> None:
    source, informer = source_and_informer
    updates: list[tuple[str, str]] = []
    informer.add_event_handler(on_update=lambda old, new: updates.append((rv_of(old), rv_of(new))))
    informer.start()
    (await source.watch_number(1)).fail(Expired(410, "Expired", "too old"))
    await source.watch_number(2)
    await wait(lambda: len(updates) == 2, "resync-like updates")
    assert updates == [("1", "1"), ("2", "2")]


async def test_a_slow_handler_does_not_delay_another_and_each_sees_events_in_order(
    source_and_informer: tuple[FakeSource, SharedInformer],
) -> None:
    source, informer = source_and_informer
    gate = asyncio.Event()
    slow_seen: list[str] = []

    async def slow(o: Obj) -> None:
        await gate.wait()
        slow_seen.append(rv_of(o))

    async def slow_update(old: Obj, new: Obj) -> None:
        slow_seen.append(rv_of(new))

    informer.add_event_handler(on_add=slow, on_update=slow_update)
    fast = Recorder()
    fast.register(informer)
    informer.start()
    stream = await source.watch_number(1)
    stream.send(*(event("MODIFIED", cm("a", str(rv))) for rv in range(10, 20)))
    await wait(lambda: len(fast.seen) == 12, "fast handler got everything")
    assert slow_seen == []
    gate.set()
    await wait(lambda: len(slow_seen) == 12, "slow handler caught up")
    assert slow_seen == ["1", "2", *map(str, range(10, 20))]
    assert [rv for _, _, rv in fast.seen] == slow_seen


async def test_a_handler_added_late_first_receives_the_current_contents_as_adds(
    source_and_informer: tuple[FakeSource, SharedInformer],
) -> None:
    source, informer = source_and_informer
    informer.start()
    stream = await source.watch_number(1)
    stream.send(event("DELETED", cm("a", "6")))
    await wait(lambda: informer.last_sync_resource_version == "6", "delete applied")
    late = Recorder()
    reg = late.register(informer)
    stream.send(event("ADDED", cm("z", "7")))
    await wait(lambda: len(late.seen) == 2, "late handler")
    assert late.seen == [("add", "b", "2"), ("add", "z", "7")]
    assert reg.has_synced()


async def test_a_failing_handler_keeps_receiving_later_events(
    source_and_informer: tuple[FakeSource, SharedInformer],
) -> None:
    source, informer = source_and_informer
    calls: list[str] = []

    def flaky(o: Obj) -> None:
        calls.append(o["metadata"]["name"])
        raise RuntimeError("handler bug")

    informer.add_event_handler(on_add=flaky)
    informer.start()
    (await source.watch_number(1)).send(event("ADDED", cm("c", "6")))
    await wait(lambda: len(calls) == 3, "all adds despite errors")
    assert calls == ["a", "b", "c"]


async def test_transform_runs_before_storing_and_strip_managed_fields_drops_them() -> None:
    source = FakeSource([cm("a", "1", managedFields=[{"manager": "kubectl"}])])
    informer = SharedInformer(
        source, CONFIG_MAPS, "ns", transform=strip_managed_fields, clock=sleep_driven_clock()
    )
    seen: list[Obj] = []
    informer.add_event_handler(on_add=seen.append)
    informer.start()
    try:
        (await source.watch_number(1)).send(event("ADDED", cm("b", "2", managedFields=[{"manager": "x"}])))
        await wait(lambda: len(seen) == 2, "adds")
        assert all("managedFields" not in o["metadata"] for o in [*informer.list(), *seen])
    finally:
        await informer.stop()


async def test_custom_and_builtin_indexes_follow_watch_events() -> None:
    owner = [{"uid": "job-uid", "controller": True, "kind": "Job", "name": "j", "apiVersion": "batch/v1"}]
    source = FakeSource([cm("p0", "1", ownerReferences=owner)])
    informer = SharedInformer(
        source,
        PODS,
        "ns",
        clock=sleep_driven_clock(),
        indexers={"by-name": lambda o: [o["metadata"]["name"]]},
    )
    informer.start()
    try:
        stream = await source.watch_number(1)
        stream.send(event("ADDED", cm("p1", "2", ownerReferences=owner)), event("DELETED", cm("p0", "3")))
        await wait(lambda: informer.last_sync_resource_version == "3", "events applied")
        assert [o["metadata"]["name"] for o in informer.by_index(CONTROLLER_OWNER_INDEX, "job-uid")] == ["p1"]
        assert informer.by_index("by-name", "p0") == []
    finally:
        await informer.stop()


async def test_factory_shares_one_informer_per_resource_and_namespace_and_syncs_them() -> None:
    source = FakeSource([cm("a", "1")])
    factory = SharedInformerFactory(source, clock=sleep_driven_clock())
    first = factory.informer(CONFIG_MAPS, "ns")
    assert factory.informer(CONFIG_MAPS, "ns") is first
    assert factory.informer(CONFIG_MAPS, None) is not first
    assert factory.informer(PODS, "ns") is not first
    with_index = factory.informer(CONFIG_MAPS, "ns", indexers={"extra": lambda o: []})
    assert with_index is first
    assert "extra" in first.store.index_names()
    factory.start()
    try:
        assert await factory.wait_for_cache_sync(timeout=5)
        assert all(i.has_synced() for i in factory.informers())
        assert "managedFields" not in first.list()[0]["metadata"]
    finally:
        await factory.shutdown()
    await settle()
    assert not any(i.reflector.running for i in factory.informers())


async def test_factory_cache_sync_times_out_while_the_first_list_is_outstanding() -> None:
    source = FakeSource()
    source.list_gate = asyncio.Event()
    factory = SharedInformerFactory(source, clock=sleep_driven_clock())
    informer = factory.informer(CONFIG_MAPS)
    factory.start()
    try:
        assert not await factory.wait_for_cache_sync(timeout=0.05)
        assert not informer.has_synced()
    finally:
        await factory.shutdown()
