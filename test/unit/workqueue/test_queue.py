"""client-go's queue contract: de-duplication, one processor per item, shutdown semantics."""

from __future__ import annotations

import asyncio

import pytest

from mpioperator.clock import FakeClock, settle
from mpioperator.workqueue.queue import Queue

pytestmark = pytest.mark.unit


async def test_duplicate_adds_collapse_into_one_item() -> None:
    q: Queue[str] = Queue(clock=FakeClock())
    q.add("a")
    q.add("a")
    q.add("b")
    assert len(q) == 2
    assert await q.get() == ("a", False)
    assert await q.get() == ("b", False)


async def test_item_added_while_processing_is_requeued_once_after_done() -> None:
    q: Queue[str] = Queue(clock=FakeClock())
    q.add("a")
    _item, _ = await q.get()
    q.add("a")
    q.add("a")
    assert len(q) == 0, "not handed to a second worker while the first processes it"
    q.done("a")
    assert len(q) == 1
    assert await q.get() == ("a", False)
    q.done("a")
    assert len(q) == 0


async def test_done_without_new_add_does_not_requeue() -> None:
    q: Queue[str] = Queue(clock=FakeClock())
    q.add("a")
    await q.get()
    q.done("a")
    assert len(q) == 0
    assert q.processing == 0


async def test_get_blocks_until_an_item_is_added() -> None:
    q: Queue[str] = Queue(clock=FakeClock())
    getter = asyncio.ensure_future(q.get())
    await settle()
    assert not getter.done()
    q.add("x")
    await settle()
    assert getter.result() == ("x", False)


async def test_shutdown_wakes_waiting_getters_with_shutdown_flag() -> None:
    q: Queue[str] = Queue(clock=FakeClock())
    getters = [asyncio.ensure_future(q.get()) for _ in range(3)]
    await settle()
    q.shut_down()
    await settle()
    assert [g.result() for g in getters] == [(None, True)] * 3


async def test_queued_items_are_still_handed_out_after_shutdown_but_new_adds_are_ignored() -> None:
    q: Queue[str] = Queue(clock=FakeClock())
    q.add("a")
    q.shut_down()
    q.add("b")
    assert await q.get() == ("a", False)
    assert await q.get() == (None, True)


async def test_shutdown_with_drain_waits_for_items_in_processing() -> None:
    q: Queue[str] = Queue(clock=FakeClock())
    q.add("a")
    await q.get()
    drained = asyncio.ensure_future(q.shut_down_with_drain())
    await settle()
    assert not drained.done()
    q.done("a")
    await settle()
    assert drained.done()


async def test_shutdown_with_drain_returns_at_once_when_idle() -> None:
    q: Queue[str] = Queue(clock=FakeClock())
    await asyncio.wait_for(q.shut_down_with_drain(), 1)
    assert q.shutting_down


async def test_items_come_out_in_fifo_order() -> None:
    q: Queue[int] = Queue(clock=FakeClock())
    for i in range(5):
        q.add(i)
    assert [(await q.get())[0] for _ in range(5)] == [0, 1, 2, 3, 4]


async def test_cancelled_getter_does_not_swallow_an_item() -> None:
    q: Queue[str] = Queue(clock=FakeClock())
    first = asyncio.ensure_future(q.get())
    second = asyncio.ensure_future(q.get())
    await settle()
    first.cancel()
    q.add("a")
    await settle()
    assert second.result() == ("a", False)
