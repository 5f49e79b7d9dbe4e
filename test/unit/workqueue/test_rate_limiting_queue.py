"""The controller's queue: rate-limited retries and forget."""

from __future__ import annotations

from mpioperator.clock import FakeClock
from mpioperator.workqueue.rate_limiters import ItemExponentialFailureRateLimiter
from mpioperator.workqueue.rate_limiting import RateLimitingQueue


def new_queue() -> tuple[RateLimitingQueue[str], FakeClock]:
    clock = FakeClock()
    return RateLimitingQueue(ItemExponentialFailureRateLimiter(1.0, 60.0), clock=clock), clock


async def test_rate_limited_add_waits_the_backoff_then_forget_resets_it() -> None:
    q, clock = new_queue()
    q.add_rate_limited("a")
    assert len(q) == 0
    await clock.advance(1.0)
    assert len(q) == 1
    await q.get()
    q.done("a")
    q.add_rate_limited("a")
    await clock.advance(1.0)
    assert len(q) == 0, "second failure waits 2 s"
    await clock.advance(1.0)
    assert len(q) == 1
    assert q.num_requeues("a") == 2
    q.forget("a")
    assert q.num_requeues("a") == 0
    await q.get()
    q.done("a")
    q.add_rate_limited("a")
    await clock.advance(1.0)
    assert len(q) == 1, "after forget the backoff starts again at the base delay"


async def test_forget_leaves_a_pending_retry_in_place() -> None:
    q, clock = new_queue()
    q.add_rate_limited("a")
    q.forget("a")
    await clock.advance(1.0)
    assert len(q) == 1


async def test_rate_limited_adds_are_per_item() -> None:
    q, clock = new_queue()
    q.add_rate_limited("a")
    q.add_rate_limited("a")  # the 2 s deadline loses to the pending 1 s one
    q.add_rate_limited("b")
    await clock.advance(1.0)
    assert len(q) == 2
    assert q.num_requeues("a") == 2
    assert q.num_requeues("b") == 1
