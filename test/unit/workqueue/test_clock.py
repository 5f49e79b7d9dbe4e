"""The fake clock moves only when told to and wakes sleepers deterministically."""

from __future__ import annotations

import asyncio
import datetime as dt

import pytest

from mpioperator.clock import FakeClock, RealClock, settle


async def test_advance_wakes_only_sleepers_whose_deadline_passed() -> None:
    clock = FakeClock()
    short = asyncio.ensure_future(clock.sleep(1))
    long = asyncio.ensure_future(clock.sleep(5))
    await settle()
    assert clock.sleepers == 2
    await clock.advance(1)
    assert short.done()
    assert not long.done()
    await clock.advance(3.9)
    assert not long.done()
    await clock.advance(0.1)
    assert long.done()
    assert clock.sleepers == 0


async def test_sleepers_wake_in_deadline_order_seeing_their_own_deadline_as_now() -> None:
    clock = FakeClock(start=0.0)
    woke: list[tuple[str, float]] = []

    async def sleeper(name: str, seconds: float) -> None:
        await clock.sleep(seconds)
        woke.append((name, clock.now()))

    tasks = [asyncio.ensure_future(sleeper(n, s)) for n, s in (("c", 3), ("a", 1), ("b", 2))]
    await settle()
    await clock.advance(10)
    await asyncio.gather(*tasks)
    assert woke == [("a", 1.0), ("b", 2.0), ("c", 3.0)]
    assert clock.now() == 10.0


async def test_cancelled_sleeper_is_dropped() -> None:
    clock = FakeClock()
    sleeping = asyncio.ensure_future(clock.sleep(1))
    await settle()
    sleeping.cancel()
    await settle()
    assert clock.sleepers == 0
    await clock.advance(2)
    assert sleeping.cancelled()


async def test_zero_sleep_returns_without_advancing() -> None:
    clock = FakeClock(start=5.0)
    await asyncio.wait_for(clock.sleep(0), 1)
    assert clock.now() == 5.0


async def test_time_cannot_go_back() -> None:
    with pytest.raises(ValueError, match="cannot go back"):
        await FakeClock().advance(-1)


async def test_wall_time_advances_with_monotonic_time_and_can_be_set() -> None:
    start = dt.datetime(2030, 5, 1, 12, 0, tzinfo=dt.UTC)
    clock = FakeClock(wall=start)
    assert clock.utcnow() == start
    await clock.step(90)
    assert clock.utcnow() == start + dt.timedelta(seconds=90)
    clock.set_wall(dt.datetime(2031, 1, 1, tzinfo=dt.UTC))
    await clock.advance(1.5)
    assert clock.utcnow() == dt.datetime(2031, 1, 1, 0, 0, 1, 500000, tzinfo=dt.UTC)


def test_wall_time_must_be_timezone_aware() -> None:
    with pytest.raises(ValueError, match="timezone-aware"):
        FakeClock().set_wall(dt.datetime(2030, 1, 1))


def test_real_clock_wall_time_is_aware_utc() -> None:
    assert RealClock().utcnow().utcoffset() == dt.timedelta(0)
