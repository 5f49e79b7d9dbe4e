"""Delayed adds: driven by the injected clock, earliest deadline wins."""

from __future__ import annotations

from mpioperator.clock import FakeClock
from mpioperator.workqueue.delaying import DelayingQueue


def new_queue() -> tuple[DelayingQueue[str], FakeClock]:
    clock = FakeClock()
    return DelayingQueue(clock=clock), clock


async def test_add_after_makes_the_item_ready_only_once_the_delay_passed() -> None:
    q, clock = new_queue()
    q.add_after("a", 5)
    await clock.advance(4.9)
    assert len(q) == 0
    assert q.waiting == 1
    await clock.advance(0.1)
    assert len(q) == 1
    assert q.waiting == 0


async def test_add_after_zero_or_negative_adds_immediately() -> None:
    q, _ = new_queue()
    q.add_after("a", 0)
    q.add_after("b", -1)
    assert len(q) == 2
    assert q.waiting == 0


async def test_earlier_deadline_for_the_same_item_wins() -> None:
    q, clock = new_queue()
    q.add_after("a", 10)
    q.add_after("a", 2)
    assert q.waiting == 1
    await clock.advance(2)
    assert len(q) == 1
    await q.get()
    q.done("a")
    await clock.advance(10)
    assert len(q) == 0, "the superseded later deadline does not add it again"


async def test_delay_left_counts_down_to_the_earliest_deadline_and_ends_with_the_wait() -> None:
    q, clock = new_queue()
    assert q.delay_left("a") is None
    q.add_after("a", 10)
    q.add_after("a", 4)
    await clock.advance(1)
    assert q.delay_left("a") == 3
    await clock.advance(3)
    assert q.delay_left("a") is None
    assert len(q) == 1


async def test_later_deadline_for_a_waiting_item_is_ignored() -> None:
    q, clock = new_queue()
    q.add_after("a", 2)
    q.add_after("a", 10)
    await clock.advance(2)
    assert len(q) == 1
    await q.get()
    q.done("a")
    await clock.advance(10)
    assert len(q) == 0


async def test_an_earlier_item_added_later_is_not_held_behind_a_later_one() -> None:
    q, clock = new_queue()
    q.add_after("late", 10)
    q.add_after("early", 1)
    await clock.advance(1)
    assert await q.get() == ("early", False)
    assert q.waiting == 1
    await clock.advance(9)
    assert await q.get() == ("late", False)


async def test_items_become_ready_in_deadline_order() -> None:
    q, clock = new_queue()
    q.add_after("late", 3)
    q.add_after("early", 1)
    q.add_after("middle", 2)
    await clock.advance(3)
    assert [(await q.get())[0] for _ in range(3)] == ["early", "middle", "late"]


async def test_a_delayed_item_already_queued_collapses_with_it() -> None:
    q, clock = new_queue()
    q.add("a")
    q.add_after("a", 1)
    await clock.advance(1)
    assert len(q) == 1


async def test_delayed_add_of_an_item_being_processed_requeues_it_after_done() -> None:
    q, clock = new_queue()
    q.add("a")
    await q.get()
    q.add_after("a", 1)
    await clock.advance(1)
    assert len(q) == 0
    q.done("a")
    assert len(q) == 1


async def test_shutdown_drops_pending_delayed_adds() -> None:
    q, clock = new_queue()
    q.add_after("a", 1)
    q.shut_down()
    assert q.waiting == 0
    await clock.advance(5)
    assert len(q) == 0
    assert clock.sleepers == 0


async def test_add_after_is_ignored_once_shut_down() -> None:
    q, clock = new_queue()
    q.shut_down()
    q.add_after("a", 0)
    q.add_after("b", 1)
    await clock.advance(1)
    assert len(q) == 0
    assert q.waiting == 0


async def test_closing_the_queue_ends_its_delay_timer_and_refuses_items() -> None:
    q, _ = new_queue()
    q.add_after("a", 5)
    timer = q._timer
    assert timer is not None and not timer.done()

    await q.close()

    assert timer.done()
    q.add("b")
    q.add_after("c", 1)
    assert len(q) == 0 and q.waiting == 0
