"""The token bucket the API client and the work queue share."""

from __future__ import annotations

import pytest

from mpioperator.clock import FakeClock
from mpioperator.tokenbucket import TokenBucket


def bucket(qps: float, burst: int, time: FakeClock) -> TokenBucket:
    return TokenBucket(qps, burst, time)


async def test_a_full_bucket_lets_a_burst_through_without_waiting() -> None:
    time = FakeClock(on_sleep="return")
    limiter = bucket(5.0, 3, time)
    assert [await limiter.acquire() for _ in range(3)] == [0.0, 0.0, 0.0]
    assert time.sleeps == []


async def test_requests_past_the_burst_are_spaced_one_over_qps_apart() -> None:
    time = FakeClock(on_sleep="return")
    limiter = bucket(10.0, 2, time)
    delays = [await limiter.acquire() for _ in range(5)]
    assert delays == pytest.approx([0.0, 0.0, 0.1, 0.2, 0.3])
    assert time.sleeps == pytest.approx([0.1, 0.2, 0.3])


async def test_tokens_refill_with_time_but_never_above_the_burst() -> None:
    time = FakeClock(on_sleep="return")
    limiter = bucket(2.0, 2, time)
    await limiter.acquire()
    await limiter.acquire()
    await time.advance(60.0)
    assert [await limiter.acquire() for _ in range(3)] == pytest.approx([0.0, 0.0, 0.5])


async def test_a_partly_refilled_bucket_waits_only_for_the_missing_fraction() -> None:
    time = FakeClock(on_sleep="return")
    limiter = bucket(4.0, 1, time)
    await limiter.acquire()
    await time.advance(0.1)
    assert await limiter.acquire() == pytest.approx(0.15)


def test_sustained_rate_matches_qps() -> None:
    time = FakeClock(on_sleep="return")
    limiter = bucket(5.0, 10, time)
    waits = [limiter.reserve() for _ in range(60)]
    # 10 from the burst, then 50 more at 5/s: the last one goes 10 s after the first.
    assert waits[-1] == pytest.approx(10.0)


@pytest.mark.parametrize(("qps", "burst"), [(0.0, 1), (-1.0, 1), (1.0, 0)])
def test_nonsense_settings_are_rejected(qps: float, burst: int) -> None:
    with pytest.raises(ValueError, match="token bucket"):
        TokenBucket(qps, burst)


async def test_a_bucket_counts_the_tokens_it_hands_out_and_the_waits_it_asked_for() -> None:
    time = FakeClock(on_sleep="return")
    limiter = bucket(10.0, 2, time)
    for _ in range(4):
        await limiter.acquire()
    assert limiter.taken == 4
    assert limiter.waited == pytest.approx(0.1 + 0.2)
