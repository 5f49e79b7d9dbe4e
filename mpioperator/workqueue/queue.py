"""client-go's work queue for one asyncio loop: fair FIFO, an item is never processed twice at once.

`dirty` holds items that need processing; `processing` those handed out. An item added while it is
being processed waits in `dirty` and is queued again when `done` is called, so a burst of events
for one key collapses into at most one extra sync.
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Hashable
from typing import Generic, TypeVar

from mpioperator.clock import Clock, RealClock
from mpioperator.workqueue.metrics import NoMetrics, QueueMetrics

T = TypeVar("T", bound=Hashable)


class Queue(Generic[T]):
    def __init__(self, *, clock: Clock | None = None, metrics: QueueMetrics | None = None) -> None:
        self._clock: Clock = clock or RealClock()
        self._metrics: QueueMetrics = metrics or NoMetrics()
        self._queue: deque[T] = deque()
        self._dirty: set[T] = set()
        self._processing: dict[T, float] = {}
        self._added_at: dict[T, float] = {}
        self._getters: deque[asyncio.Future[None]] = deque()
        self._drained: list[asyncio.Future[None]] = []
        self._shutting_down = False

    def __len__(self) -> int:
        return len(self._queue)

    @property
    def shutting_down(self) -> bool:
        return self._shutting_down

    @property
    def processing(self) -> int:
        return len(self._processing)

    def add(self, item: T) -> None:
        if self._shutting_down or item in self._dirty:
            return
        self._dirty.add(item)
        self._added_at.setdefault(item, self._clock.now())
        self._metrics.added(len(self._queue) + (0 if item in self._processing else 1))
        if item in self._processing:
            return
        self._queue.append(item)
        self._wake_one()

    async def get(self) -> tuple[T | None, bool]:
        """The next item and False, or (None, True) once shut down and empty."""
        while not self._queue and not self._shutting_down:
            waiter: asyncio.Future[None] = asyncio.get_running_loop().create_future()
            self._getters.append(waiter)
            try:
                await waiter
            except asyncio.CancelledError:
                if waiter in self._getters:
                    self._getters.remove(waiter)
                elif self._queue:
                    # We were woken for an item we will not take: pass the wake-up on.
                    self._wake_one()
                raise
        if not self._queue:
            return None, True
        item = self._queue.popleft()
        now = self._clock.now()
        self._processing[item] = now
        self._dirty.discard(item)
        self._metrics.got(len(self._queue), now - self._added_at.pop(item, now))
        self._report_in_flight(now)
        return item, False

    def done(self, item: T) -> None:
        started = self._processing.pop(item, None)
        now = self._clock.now()
        if started is not None:
            self._metrics.done(now - started)
        self._report_in_flight(now)
        if item in self._dirty:
            self._queue.append(item)
            self._wake_one()
        elif not self._processing:
            for waiter in self._drained:
                if not waiter.done():
                    waiter.set_result(None)
            self._drained.clear()

    def shut_down(self) -> None:
        """Refuse new items and wake every getter; queued items are still handed out."""
        self._shutting_down = True
        while self._getters:
            waiter = self._getters.popleft()
            if not waiter.done():
                waiter.set_result(None)

    async def shut_down_with_drain(self) -> None:
        """Shut down, then wait until every item handed out so far is done."""
        self.shut_down()
        while self._processing:
            waiter: asyncio.Future[None] = asyncio.get_running_loop().create_future()
            self._drained.append(waiter)
            await waiter

    def _wake_one(self) -> None:
        while self._getters:
            waiter = self._getters.popleft()
            if not waiter.done():
                waiter.set_result(None)
                return

    def _report_in_flight(self, now: float) -> None:
        ages = [now - started for started in self._processing.values()]
        self._metrics.in_flight(sum(ages), max(ages, default=0.0))
