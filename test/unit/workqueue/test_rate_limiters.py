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


def test_exponential_backoff_doubles_per_failure_and_caps() -> None:
    limiter = ItemExponentialFailureRateLimiter(0.001, 1.0)
    delays = [limiter.when("a") for _ in range(12)]
    assert delays[:5] == [0.001, 0.002, 0.004, 0.008, 0.016]
    assert delays[9] == 0.512
    assert delays[10:] == [1.0, 1.0]
    assert limiter.num_requeues("a") == 12


def test_exponential_backoff_is_per_item_and_forget_resets() -> None:
    limiter = ItemExponentialFailureRateLimiter(0.001, 1.0)
    limiter.when("a")
    limiter.when("a")
    assert limiter.when("b") == 0.001
    limiter.forget("a")
    assert limiter.num_requeues("a") == 0
    assert limiter.num_requeues("b") == 1
    assert limiter.when("a") == 0.001


def test_exponential_backoff_survives_huge_failure_counts() -> None:
    limiter = ItemExponentialFailureRateLimiter(0.005, 1000.0)
    delays = [limiter.when("a") for _ in range(1100)]
    assert set(delays[18:]) == {1000.0}


def test_fast_slow_switches_after_max_fast_attempts() -> None:
    limiter = ItemFastSlowRateLimiter(0.005, 10.0, 3)
    assert [limiter.when("a") for _ in range(5)] == [0.005, 0.005, 0.005, 10.0, 10.0]
    assert limiter.when("b") == 0.005
    assert limiter.num_requeues("a") == 5
    limiter.forget("a")
    assert limiter.num_requeues("a") == 0
    assert limiter.when("a") == 0.005


def test_bucket_allows_burst_then_spaces_by_one_over_qps() -> None:
    limiter = BucketRateLimiter(qps=10, burst=3, clock=FakeClock())
    assert [limiter.when(i) for i in range(3)] == [0.0, 0.0, 0.0]
    assert [limiter.when(i) for i in range(3, 6)] == pytest.approx([0.1, 0.2, 0.3])


async def test_bucket_refills_with_time_up_to_the_burst() -> None:
    clock = FakeClock()
    limiter = BucketRateLimiter(qps=10, burst=2, clock=clock)
    limiter.when(0)
    limiter.when(1)
    await clock.advance(0.2)
    assert limiter.when(2) == 0.0
    assert limiter.when(3) == 0.0
    assert limiter.when(4) == pytest.approx(0.1)
    await clock.advance(60)
    assert [limiter.when(i) for i in range(3)] == pytest.approx([0.0, 0.0, 0.1]), "refill stops at burst"


async def test_bucket_reservations_are_kept_so_waiting_callers_are_not_rebooked() -> None:
    clock = FakeClock()
    limiter = BucketRateLimiter(qps=1, burst=1, clock=clock)
    assert limiter.when("a") == 0.0
    assert limiter.when("b") == 1.0
    assert limiter.when("c") == 2.0
    await clock.advance(1.5)
    assert limiter.when("d") == pytest.approx(1.5), "tokens for b and c are still spoken for"


def test_bucket_does_not_track_items() -> None:
    limiter = BucketRateLimiter(qps=10, burst=1, clock=FakeClock())
    limiter.when("a")
    assert limiter.num_requeues("a") == 0
    limiter.forget("a")
    assert limiter.when("a") == pytest.approx(0.1), "forget does not give the token back"


@pytest.mark.parametrize(("qps", "burst"), [(0, 10), (-1, 10), (10, 0)])
def test_bucket_rejects_a_limit_that_never_refills_or_holds_nothing(qps: float, burst: int) -> None:
    with pytest.raises(ValueError, match="token bucket"):
        BucketRateLimiter(qps=qps, burst=burst, clock=FakeClock())


def test_max_of_picks_the_longest_wait_and_charges_every_limiter() -> None:
    limiter = MaxOfRateLimiter(
        ItemExponentialFailureRateLimiter(1.0, 100.0), BucketRateLimiter(1, 1, FakeClock())
    )
    assert limiter.when("a") == 1.0  # exponential 1 s vs bucket 0
    assert limiter.when("b") == 1.0  # exponential 1 s vs bucket 1 s (the token went to "a")
    assert limiter.when("a") == 2.0  # exponential 2 s vs bucket 2 s
    assert limiter.when("c") == 3.0  # bucket wins
    assert limiter.num_requeues("a") == 2
    limiter.forget("a")
    assert limiter.num_requeues("a") == 0
    assert limiter.num_requeues("b") == 1


def test_max_of_needs_a_limiter() -> None:
    with pytest.raises(ValueError, match="at least one"):
        MaxOfRateLimiter()


def test_default_controller_limiter_backs_off_from_5ms_to_1000s() -> None:
    limiter = default_controller_rate_limiter(clock=FakeClock())
    delays = [limiter.when("a") for _ in range(19)]
    assert delays[:3] == [0.005, 0.01, 0.02]
    assert delays[17] == pytest.approx(655.36)
    assert delays[18] == 1000.0


def test_default_controller_limiter_spaces_retries_beyond_a_burst_of_100_at_10_qps() -> None:
    limiter = default_controller_rate_limiter(clock=FakeClock())
    delays = [limiter.when(i) for i in range(102)]
    assert delays[:100] == [0.005] * 100
    assert delays[100:] == pytest.approx([0.1, 0.2])
