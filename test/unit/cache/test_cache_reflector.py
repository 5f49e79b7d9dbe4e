"""Reflector policy, with a scripted list/watch source (faults on demand) and a fake clock."""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import replace
from typing import Any

import pytest

from mpioperator.api.objects import Obj
from mpioperator.cache.reflector import DEFAULT_OPTIONS, Reflector
from mpioperator.clock import FakeClock
from mpioperator.kube.errors import ApiError, Expired, TooManyRequests, WatchInactive
from mpioperator.kube.resources import CONFIG_MAPS
from test.unit.cache.cache_fakes import FakeSource, bookmark, cm, event, settle, sleep_driven_clock, wait


class RecordingStore:
    def __init__(self) -> None:
        self.ops: list[tuple[str, Any]] = []

    def add(self, obj: Obj) -> None:
        self.ops.append(("add", obj["metadata"]["name"]))

    def update(self, obj: Obj) -> None:
        self.ops.append(("update", obj["metadata"]["name"]))

    def delete(self, obj: Obj) -> None:
        self.ops.append(("delete", obj["metadata"]["name"]))

    def replace(self, items: list[Obj], resource_version: str) -> None:
        self.ops.append(("replace", ([i["metadata"]["name"] for i in items], resource_version)))
        self.items = items


Harness = tuple[Reflector, FakeSource, RecordingStore, FakeClock]


@pytest.fixture
async def harness() -> AsyncIterator[Harness]:
    source = FakeSource([cm(f"c{i}", str(i)) for i in range(5)], rv="10")
    store, clock = RecordingStore(), sleep_driven_clock()
    paged = replace(DEFAULT_OPTIONS, limit=2)
    reflector = Reflector(
        source, CONFIG_MAPS, store, namespace="ns", clock=clock, options=paged, rand=lambda: 1.0
    )
    reflector.start()
    yield reflector, source, store, clock
    await reflector.stop()


async def test_lists_every_page_then_watches_from_the_list_resource_version(harness: Harness) -> None:
    reflector, source, store, _ = harness
    stream = await source.watch_number(1)
    assert [c.get("continue_token") for c in source.list_calls] == [None, "2", "4"]
    assert all(c["limit"] == 2 for c in source.list_calls)
    assert store.ops == [("replace", (["c0", "c1", "c2", "c3", "c4"], "10"))]
    assert all(i["kind"] == "ConfigMap" and i["apiVersion"] == "v1" for i in store.items)
    assert stream.kwargs["resource_version"] == "10"
    assert stream.kwargs["allow_bookmarks"] is True
    assert stream.kwargs["namespace"] == "ns"
    assert stream.kwargs["inactivity_timeout"] == 90.0
    assert reflector.last_sync_resource_version == "10"


@pytest.mark.parametrize(("rand", "expected"), [(0.0, 300), (0.5, 450), (0.9999, 599)])
async def test_watch_timeout_is_random_between_five_and_ten_minutes(rand: float, expected: int) -> None:
    source = FakeSource()
    reflector = Reflector(
        source, CONFIG_MAPS, RecordingStore(), clock=sleep_driven_clock(), rand=lambda: rand
    )
    reflector.start()
    try:
        stream = await source.watch_number(1)
        assert stream.kwargs["timeout_seconds"] == expected
    finally:
        await reflector.stop()


async def test_events_reach_the_store_and_every_event_advances_the_resource_version(
    harness: Harness,
) -> None:
    reflector, source, store, _ = harness
    stream = await source.watch_number(1)
    stream.send(event("ADDED", cm("n", "11")), event("MODIFIED", cm("n", "12")))
    stream.send(event("DELETED", cm("c0", "13")))
    await wait(lambda: reflector.last_sync_resource_version == "13", "rv 13")
    assert store.ops[1:] == [("add", "n"), ("update", "n"), ("delete", "c0")]
    stream.send(bookmark("20"))
    await wait(lambda: reflector.last_sync_resource_version == "20", "bookmark rv")
    assert len(store.ops) == 4, "a bookmark must not touch the store"


async def test_a_normal_end_of_stream_rewatches_at_once_from_the_last_resource_version(
    harness: Harness,
) -> None:
    _, source, _store, clock = harness
    stream = await source.watch_number(1)
    stream.send(bookmark("15"))
    stream.end()
    second = await source.watch_number(2)
    assert second.kwargs["resource_version"] == "15"
    assert stream.closed
    assert clock.sleeps == []
    assert len(source.list_calls) == 3, "no relist"


@pytest.mark.parametrize(
    "failure",
    [WatchInactive("silent for 90s"), ConnectionResetError("peer reset"), ApiError(500, "", "boom")],
    ids=["inactive", "transport", "server-error"],
)
async def test_a_failed_watch_resumes_from_the_last_resource_version_after_a_backoff(
    harness: Harness, failure: Exception
) -> None:
    _, source, _store, clock = harness
    stream = await source.watch_number(1)
    stream.send(event("MODIFIED", cm("c1", "14")))
    stream.fail(failure)
    second = await source.watch_number(2)
    assert second.kwargs["resource_version"] == "14"
    assert clock.sleeps == pytest.approx([0.8])
    assert len(source.list_calls) == 3, "no relist"


async def test_repeated_failures_back_off_exponentially(harness: Harness) -> None:
    _, source, _, clock = harness
    for n in range(1, 5):
        (await source.watch_number(n)).fail(ConnectionRefusedError())
    await source.watch_number(5)
    assert clock.sleeps == pytest.approx([0.8, 1.6, 3.2, 6.4])


async def test_expired_watch_relists_and_replaces_the_store(harness: Harness) -> None:
    reflector, source, store, _ = harness
    stream = await source.watch_number(1)
    source.objects = [cm("c9", "30")]
    source.rv = "30"
    stream.fail(Expired(410, "Expired", "too old resource version"))
    second = await source.watch_number(2)
    assert store.ops[-1] == ("replace", (["c9"], "30"))
    assert second.kwargs["resource_version"] == "30"
    assert reflector.lists == 2


async def test_the_first_list_is_served_from_the_watch_cache_and_a_relist_asks_for_the_latest(
    harness: Harness,
) -> None:
    _, source, _, _ = harness
    stream = await source.watch_number(1)
    first = len(source.list_calls)
    stream.fail(Expired(410, "Expired", "too old resource version"))
    await source.watch_number(2)
    assert {c.get("resource_version") for c in source.list_calls[:first]} == {"0"}
    assert {c.get("resource_version") for c in source.list_calls[first:]} == {None}


async def test_a_reflector_given_page_bytes_pages_its_first_list_too_and_passes_them_on() -> None:
    source = FakeSource([cm(f"c{i}", str(i)) for i in range(5)], rv="10")
    store, clock = RecordingStore(), sleep_driven_clock()
    paged = replace(DEFAULT_OPTIONS, limit=2, page_bytes=1 << 20)
    reflector = Reflector(source, CONFIG_MAPS, store, clock=clock, options=paged, rand=lambda: 1.0)
    reflector.start()
    try:
        await source.watch_number(1)
    finally:
        await reflector.stop()
    assert [c.get("resource_version") for c in source.list_calls] == [None, None, None]
    assert {c.get("page_bytes") for c in source.list_calls} == {1 << 20}
    assert store.ops == [("replace", (["c0", "c1", "c2", "c3", "c4"], "10"))]


async def test_an_error_event_with_410_relists_too(harness: Harness) -> None:
    reflector, source, _, _ = harness
    stream = await source.watch_number(1)
    stream.send({"type": "ERROR", "object": {"kind": "Status", "code": 410, "reason": "Expired"}})
    await source.watch_number(2)
    assert reflector.lists == 2


async def test_too_many_requests_waits_at_least_retry_after(harness: Harness) -> None:
    _, source, _, clock = harness
    (await source.watch_number(1)).fail(TooManyRequests(429, "TooManyRequests", "slow down", retry_after=7))
    await source.watch_number(2)
    assert clock.sleeps == [7]


async def test_a_failed_list_is_retried_after_a_backoff_before_any_watch() -> None:
    source = FakeSource([cm("a", "3")], rv="3")
    source.list_errors.extend([ConnectionRefusedError(), ApiError(503, "", "unavailable")])
    store, clock = RecordingStore(), sleep_driven_clock()
    reflector = Reflector(source, CONFIG_MAPS, store, clock=clock, rand=lambda: 1.0)
    reflector.start()
    try:
        stream = await source.watch_number(1)
        assert len(source.list_calls) == 3
        assert clock.sleeps == pytest.approx([0.8, 1.6])
        assert stream.kwargs["resource_version"] == "3"
    finally:
        await reflector.stop()


async def test_a_watch_that_ends_at_once_without_events_counts_as_a_failure(harness: Harness) -> None:
    _, source, _, clock = harness
    (await source.watch_number(1)).end()
    await source.watch_number(2)
    assert clock.sleeps == pytest.approx([0.8])


async def test_stop_closes_the_watch_and_a_new_start_resumes_without_relisting(harness: Harness) -> None:
    reflector, source, _, _ = harness
    stream = await source.watch_number(1)
    stream.send(bookmark("17"))
    await wait(lambda: reflector.last_sync_resource_version == "17", "bookmark")
    await reflector.stop()
    assert stream.closed
    assert not reflector.running
    await settle()
    assert len(source.streams) == 1
    reflector.start()
    second = await source.watch_number(2)
    assert second.kwargs["resource_version"] == "17"
    assert reflector.lists == 1
