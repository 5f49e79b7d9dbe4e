"""client-go's queue contract: de-duplication, one processor per item, shutdown semantics."""

from __future__ import annotations

import asyncio

from mpioperator.clock import FakeClock, settle
from mpioperator.workqueue.queue import Queue


def new_queue() -> Queue[str]:
    return Queue(clock=FakeClock())


async def test_duplicate_adds_collapse_into_one_item() -> None:
    q = new_queue()
    q.add("a")
    q.add("a")
    q.add("b")
    assert len(q) == 2
    assert await q.get() == ("a", False)
    assert await q.get() == ("b", False)
    assert len(q) == 0


async def test_items_come_out_in_fifo_order() -> None:
    q: Queue[int] = Queue(clock=FakeClock())
    for i in range(5):
        q.add(i)
    assert [(await q.get())[0] for _ in range(5)] == [0, 1, 2, 3, 4]


async def test_item_added_while_processing_is_requeued_after_done() -> None:
    q = new_queue()
    q.add("a")
    await q.get()
    q.add("a")
    assert len(q) == 0, "not handed to a second worker while the first processes it"
    q.done("a")
    assert len(q) == 1
    assert await q.get() == ("a", False)


async def test_adds_while_processing_collapse_into_one_requeue() -> None:
    q = new_queue()
    q.add("a")
    await q.get()
    for _ in range(3):
        q.add("a")
    q.done("a")
    assert len(q) == 1
    await q.get()
    q.done("a")
    assert len(q) == 0
    assert q.processing == 0


async def test_a_second_worker_gets_other_items_while_one_is_processing() -> None:
    q = new_queue()
    q.add("a")
    await q.get()
    q.add("a")
    q.add("b")
    assert await q.get() == ("b", False)


async def test_done_without_a_new_add_does_not_requeue() -> None:
    q = new_queue()
    q.add("a")
    await q.get()
    q.done("a")
    assert len(q) == 0
    assert q.processing == 0


async def test_done_for_an_item_never_handed_out_does_not_duplicate_it() -> None:
    q = new_queue()
    q.add("a")
    q.done("a")
    assert len(q) == 1


async def test_get_blocks_until_an_item_is_added() -> None:
    q = new_queue()
    getter = asyncio.ensure_future(q.get())
    await settle()
    assert not getter.done()
    q.add("x")
    await settle()
    assert getter.result() == ("x", False)


async def test_waiting_getters_are_served_in_arrival_order() -> None:
    q = new_queue()
    first = asyncio.ensure_future(q.get())
    await settle()
    second = asyncio.ensure_future(q.get())
    await settle()
    q.add("a")
    q.add("b")
    await settle()
    assert first.result() == ("a", False)
    assert second.result() == ("b", False)


async def test_cancelled_getter_does_not_swallow_an_item() -> None:
    q = new_queue()
    first = asyncio.ensure_future(q.get())
    second = asyncio.ensure_future(q.get())
    await settle()
    first.cancel()
    q.add("a")
    await settle()
    assert second.result() == ("a", False)


async def test_getter_cancelled_after_its_wake_up_passes_the_item_on() -> None:
    q = new_queue()
    first = asyncio.ensure_future(q.get())
    second = asyncio.ensure_future(q.get())
    await settle()
    q.add("a")  # wakes `first`, which is cancelled before it runs
    first.cancel()
    await settle()
    assert first.cancelled()
    assert second.result() == ("a", False)


async def test_shutdown_wakes_waiting_getters_with_the_shutdown_flag() -> None:
    q = new_queue()
    getters = [asyncio.ensure_future(q.get()) for _ in range(3)]
    await settle()
    q.shut_down()
    await settle()
    assert [g.result() for g in getters] == [(None, True)] * 3
    assert q.shutting_down


async def test_adds_after_shutdown_are_ignored() -> None:
    q = new_queue()
    q.shut_down()
    q.add("a")
    assert len(q) == 0
    assert await q.get() == (None, True)


async def test_items_queued_before_shutdown_are_still_handed_out() -> None:
    q = new_queue()
    q.add("a")
    q.shut_down()
    assert await q.get() == ("a", False)
    assert await q.get() == (None, True)


async def test_shutdown_with_drain_waits_for_every_item_in_processing() -> None:
    q = new_queue()
    q.add("a")
    q.add("b")
    await q.get()
    await q.get()
    drained = asyncio.ensure_future(q.shut_down_with_drain())
    await settle()
    assert q.shutting_down
    q.done("a")
    await settle()
    assert not drained.done()
    q.done("b")
    await settle()
    assert drained.done()


async def test_shutdown_with_drain_ends_when_processing_is_empty_even_if_an_item_was_requeued() -> None:
    q = new_queue()
    q.add("a")
    await q.get()
    q.add("a")
    drained = asyncio.ensure_future(q.shut_down_with_drain())
    await settle()
    q.done("a")
    await settle()
    assert drained.done()
    assert await q.get() == ("a", False), "the requeued item is still handed out"


async def test_shutdown_with_drain_returns_at_once_when_idle() -> None:
    q = new_queue()
    await asyncio.wait_for(q.shut_down_with_drain(), 1)
    assert q.shutting_down
