"""Time as a dependency: the loop's monotonic clock in production, a hand-driven one in tests."""

from __future__ import annotations

import asyncio
import datetime as dt
import heapq
import itertools
from typing import Protocol


class Clock(Protocol):
    def now(self) -> float:
        """Monotonic seconds."""
        ...

    def utcnow(self) -> dt.datetime:
        """Wall-clock time, timezone-aware UTC."""
        ...

    async def sleep(self, seconds: float) -> None: ...


class RealClock:
    def now(self) -> float:
        return asyncio.get_running_loop().time()

    def utcnow(self) -> dt.datetime:
        return dt.datetime.now(dt.UTC)

    async def sleep(self, seconds: float) -> None:
        await asyncio.sleep(max(0.0, seconds))


class FakeClock:
    """Time moves only when a test calls `advance`; sleepers whose deadline passed wake in order."""

    def __init__(self, start: float = 1000.0, wall: dt.datetime | None = None) -> None:
        self._now = start
        self._wall0 = wall or dt.datetime(2026, 1, 1, tzinfo=dt.UTC)
        self._start = start
        self._sleepers: list[tuple[float, int, asyncio.Future[None]]] = []
        self._seq = itertools.count()

    def now(self) -> float:
        return self._now

    def utcnow(self) -> dt.datetime:
        return self._wall0 + dt.timedelta(seconds=self._now - self._start)

    async def sleep(self, seconds: float) -> None:
        if seconds <= 0:
            await asyncio.sleep(0)
            return
        future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        heapq.heappush(self._sleepers, (self._now + seconds, next(self._seq), future))
        await future

    @property
    def sleepers(self) -> int:
        return sum(1 for _, _, f in self._sleepers if not f.done())

    async def advance(self, seconds: float) -> None:
        """Move time forward, waking due sleepers one deadline at a time and letting them run."""
        target = self._now + seconds
        while self._sleepers and self._sleepers[0][0] <= target:
            deadline, _, future = heapq.heappop(self._sleepers)
            self._now = max(self._now, deadline)
            if not future.done():
                future.set_result(None)
            await settle()
        self._now = target
        await settle()


async def settle(rounds: int = 10) -> None:
    """Let every ready callback run; enough rounds for chains of awaits started by a wake-up."""
    for _ in range(rounds):
        await asyncio.sleep(0)
