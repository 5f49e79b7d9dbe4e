"""Rate limiter contracts from client-go."""

from __future__ import annotations

import pytest

from mpioperator.clock import FakeClock
from mpioperator.workqueue.rate_limiters import (
    BucketRateLimiter,
    ItemExponentialFailureRateLimiter,
    ItemFastSlowRateLimiter,
    MaxOfRateLimiter,
    default_controller_rate_limiter,
)

pytestmark = pytest.mark.unit


def test_exponential_backoff_doubles_per_failure_and_caps() -> None:
    limiter = ItemExponentialFailureRateLimiter(0.001, 1.0)
    delays = [limiter.when("a") for _ in range(12)]
    assert delays[:5] == [0.001, 0.002, 0.004, 0.008, 0.016]
    assert delays[-1] == 1.0
    assert limiter.num_requeues("a") == 12


def test_exponential_backoff_is_per_item_and_forget_resets() -> None:
    limiter = ItemExponentialFailureRateLimiter(0.001, 1.0)
    limiter.when("a")
    limiter.when("a")
    assert limiter.when("b") == 0.001
    limiter.forget("a")
    assert limiter.num_requeues("a") == 0
    assert limiter.when("a") == 0.001


def test_exponential_backoff_survives_huge_failure_counts() -> None:
    limiter = ItemExponentialFailureRateLimiter(0.005, 1000.0)
    for _ in range(2000):
        delay = limiter.when("a")
    assert delay == 1000.0


def test_fast_slow_switches_after_max_fast_attempts() -> None:
    limiter = ItemFastSlowRateLimiter(0.005, 10.0, 3)
    assert [limiter.when("a") for _ in range(5)] == [0.005, 0.005, 0.005, 10.0, 10.0]
    limiter.forget("a")
    assert limiter.when("a") == 0.005


def test_bucket_allows_burst_then_spaces_by_one_over_qps() -> None:
    clock = FakeClock()
    limiter = BucketRateLimiter(qps=10, burst=3, clock=clock)
    assert [limiter.when(i) for i in range(3)] == [0.0, 0.0, 0.0]
    assert limiter.when(3) == pytest.approx(0.1)
    assert limiter.when(4) == pytest.approx(0.2)


async def test_bucket_refills_with_time() -> None:
    clock = FakeClock()
    limiter = BucketRateLimiter(qps=10, burst=2, clock=clock)
    limiter.when(0)
    limiter.when(1)
    await clock.advance(0.2)
    assert limiter.when(2) == 0.0
    assert limiter.when(3) == 0.0
    assert limiter.when(4) == pytest.approx(0.1)


def test_max_of_picks_the_longest_wait() -> None:
    clock = FakeClock()
    limiter = MaxOfRateLimiter(ItemExponentialFailureRateLimiter(1.0, 100.0), BucketRateLimiter(1, 1, clock))
    assert limiter.when("a") == 1.0  # exponential 1.0 vs bucket 0
    assert limiter.when("a") == 2.0  # exponential 2.0 vs bucket 1.0
    assert limiter.num_requeues("a") == 2
    limiter.forget("a")
    assert limiter.num_requeues("a") == 0


def test_default_controller_limiter_starts_at_five_milliseconds() -> None:
    limiter = default_controller_rate_limiter(clock=FakeClock())
    assert limiter.when("a") == 0.005
    assert limiter.when("a") == 0.01
