from __future__ import annotations

import pytest

from mpioperator.cache.backoff import Backoff
from test.unit.cache.cache_fakes import sleep_driven_clock


def test_delay_doubles_from_800ms_up_to_the_30s_cap() -> None:
    backoff = Backoff(sleep_driven_clock(), rand=lambda: 1.0)
    delays = [backoff.next_delay() for _ in range(8)]
    assert delays == pytest.approx([0.8, 1.6, 3.2, 6.4, 12.8, 25.6, 30.0, 30.0])


def test_jitter_draws_between_half_and_the_whole_base_delay() -> None:
    low = Backoff(sleep_driven_clock(), rand=lambda: 0.0)
    assert [low.next_delay() for _ in range(3)] == pytest.approx([0.4, 0.8, 1.6])
    mid = Backoff(sleep_driven_clock(), rand=lambda: 0.5)
    assert mid.next_delay() == pytest.approx(0.6)


async def test_two_quiet_minutes_reset_the_delay_to_its_start() -> None:
    clock = sleep_driven_clock()
    backoff = Backoff(clock, rand=lambda: 1.0)
    for _ in range(4):
        backoff.next_delay()
    await clock.advance(119)
    assert backoff.next_delay() == pytest.approx(12.8)
    await clock.advance(120)
    assert backoff.next_delay() == pytest.approx(0.8)


def test_thousands_of_failures_stay_at_the_cap() -> None:
    backoff = Backoff(sleep_driven_clock(), rand=lambda: 1.0)
    for _ in range(5000):
        delay = backoff.next_delay()
    assert delay == 30.0
