"""Delayed adds: driven by the injected clock, earliest deadline wins."""

from __future__ import annotations

import pytest

from mpioperator.clock import FakeClock
from mpioperator.workqueue.delaying import DelayingQueue

pytestmark = pytest.mark.unit


async def test_add_after_makes_the_item_available_only_when_the_delay_passed() -> None:
    clock = FakeClock()
    q: DelayingQueue[str] = DelayingQueue(clock=clock)
    q.add_after("a", 5)
    await clock.advance(4.9)
    assert len(q) == 0
    assert q.waiting == 1
    await clock.advance(0.1)
    assert len(q) == 1
    assert q.waiting == 0


async def test_add_after_zero_or_negative_adds_immediately() -> None:
    q: DelayingQueue[str] = DelayingQueue(clock=FakeClock())
    q.add_after("a", 0)
    q.add_after("b", -1)
    assert len(q) == 2


async def test_earlier_deadline_for_the_same_item_wins() -> None:
    clock = FakeClock()
    q: DelayingQueue[str] = DelayingQueue(clock=clock)
    q.add_after("a", 10)
    q.add_after("a", 2)
    await clock.advance(2)
    assert len(q) == 1
    await q.get()
    q.done("a")
    await clock.advance(10)
    assert len(q) == 0, "the superseded later deadline does not add it again"


async def test_later_deadline_for_a_waiting_item_is_ignored() -> None:
    clock = FakeClock()
    q: DelayingQueue[str] = DelayingQueue(clock=clock)
    q.add_after("a", 2)
    q.add_after("a", 10)
    await clock.advance(2)
    assert len(q) == 1


async def test_items_become_ready_in_deadline_order() -> None:
    clock = FakeClock()
    q: DelayingQueue[str] = DelayingQueue(clock=clock)
    q.add_after("late", 3)
    q.add_after("early", 1)
    q.add_after("middle", 2)
    await clock.advance(3)
    assert [(await q.get())[0] for _ in range(3)] == ["early", "middle", "late"]


async def test_shutdown_stops_delayed_adds() -> None:
    clock = FakeClock()
    q: DelayingQueue[str] = DelayingQueue(clock=clock)
    q.add_after("a", 1)
    q.shut_down()
    await clock.advance(5)
    assert len(q) == 0
