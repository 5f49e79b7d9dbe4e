"""Time as a dependency: the real monotonic clock in production, a hand-driven one in tests.

The one Clock protocol of the code base: every layer that waits or measures takes a `Clock`, and every
unit test drives the one `FakeClock`.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import heapq
import itertools
import time
from typing import Literal, Protocol


class Clock(Protocol):
    def now(self) -> float:
        """Monotonic seconds."""
        ...

    def utcnow(self) -> dt.datetime:
        """Wall-clock time, timezone-aware UTC."""
        ...

    async def sleep(self, seconds: float) -> None: ...


class RealClock:
    # time.monotonic is the default event loop's own time source, and unlike loop.time() it also
    # works off the loop (a metrics scrape, a log processor).
    def now(self) -> float:
        return time.monotonic()

    def utcnow(self) -> dt.datetime:
        return dt.datetime.now(dt.UTC)

    async def sleep(self, seconds: float) -> None:
        await asyncio.sleep(max(0.0, seconds))


_FAKE_WALL_START = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)


# What a FakeClock's sleep does: wait until a test's `advance` passes its deadline; move time on by its
# length and return (for code under test that is the only thing running); or return at once with time
# standing still (every wait is only recorded, as if each caller waited in parallel).
SleepMode = Literal["wait", "advance", "return"]


class FakeClock:
    """Time moves only when a test calls `advance` (or, with `on_sleep="advance"`, when someone sleeps);
    sleepers whose deadline passed wake in order. Every sleep asked for is recorded in `sleeps`."""

    def __init__(
        self, start: float = 1000.0, wall: dt.datetime | None = None, *, on_sleep: SleepMode = "wait"
    ) -> None:
        self._now = start
        self._on_sleep = on_sleep
        self.sleeps: list[float] = []
        self._wall_anchor = (start, _FAKE_WALL_START)
        if wall is not None:
            self.set_wall(wall)
        self._sleepers: list[tuple[float, int, asyncio.Future[None]]] = []
        self._seq = itertools.count()

    def now(self) -> float:
        return self._now

    def utcnow(self) -> dt.datetime:
        at, wall = self._wall_anchor
        return wall + dt.timedelta(seconds=self._now - at)

    def set_wall(self, wall: dt.datetime) -> None:
        """Jump the wall clock (as NTP may); monotonic time is unaffected and keeps driving it."""
        if wall.tzinfo is None:
            raise ValueError("wall time must be timezone-aware")
        self._wall_anchor = (self._now, wall.astimezone(dt.UTC))

    async def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        if self._on_sleep == "advance":
            self._now += max(0.0, seconds)
        if seconds <= 0 or self._on_sleep != "wait":
            await asyncio.sleep(0)
            return
        future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        heapq.heappush(self._sleepers, (self._now + seconds, next(self._seq), future))
        await future

    @property
    def sleepers(self) -> int:
        """How many sleeps are pending (cancelled ones excluded)."""
        return sum(1 for _, _, f in self._sleepers if not f.done())

    async def advance(self, seconds: float) -> None:
        """Move time forward, waking due sleepers one deadline at a time and letting each run."""
        if seconds < 0:
            raise ValueError("monotonic time cannot go back")
        target = self._now + seconds
        while self._sleepers and self._sleepers[0][0] <= target:
            deadline, _, future = heapq.heappop(self._sleepers)
            self._now = max(self._now, deadline)
            if not future.done():
                future.set_result(None)
                await settle()
        self._now = target
        await settle()

    step = advance


async def settle(rounds: int = 10) -> None:
    """Let every ready callback run; enough rounds for chains of awaits started by a wake-up."""
    for _ in range(rounds):
        await asyncio.sleep(0)
