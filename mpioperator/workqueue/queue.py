"""client-go's work queue for one asyncio loop: fair FIFO, an item is never processed twice at once.

`dirty` holds items that need processing; `processing` those handed out. An item added while it is
being processed waits in `dirty` and is queued again when `done` is called, so a burst of events
for one key collapses into at most one extra sync. Everything runs on one loop, so no locks.
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Hashable
from typing import Generic, TypeVar

from mpioperator.clock import Clock, RealClock
from mpioperator.workqueue.metrics import InFlight, NoMetrics, QueueMetrics

T = TypeVar("T", bound=Hashable)


class Queue(Generic[T]):
    def __init__(self, *, clock: Clock | None = None, metrics: QueueMetrics | None = None) -> None:
        self._clock: Clock = clock or RealClock()
        self._metrics: QueueMetrics = metrics or NoMetrics()
        self._queue: deque[T] = deque()
        self._dirty: set[T] = set()
        self._processing: dict[T, float] = {}  # item -> when it was handed out
        self._added_at: dict[T, float] = {}
        self._getters: deque[asyncio.Future[None]] = deque()
        self._drain_waiters: list[asyncio.Future[None]] = []
        self._shutting_down = False
        self._metrics.watch_in_flight(self._in_flight)

    def __len__(self) -> int:
        """Items ready to be handed out (not those being processed or still delayed)."""
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
        self._metrics.added(len(self._dirty))
        if item in self._processing:
            return  # `done` queues it, so no second worker takes it meanwhile
        self._queue.append(item)
        self._wake_one()

    async def get(self) -> tuple[T | None, bool]:
        """Wait for the next item: `(item, False)`, or `(None, True)` once shut down with nothing queued.

        Items queued before a shutdown are still handed out, so a drain can finish them. The caller
        must call `done(item)` when it is finished with it.
        """
        while not self._queue and not self._shutting_down:
            waiter: asyncio.Future[None] = asyncio.get_running_loop().create_future()
            self._getters.append(waiter)
            try:
                await waiter
            except asyncio.CancelledError:
                if waiter in self._getters:
                    self._getters.remove(waiter)
                elif self._queue:
                    self._wake_one()  # we were woken for an item we will not take: pass it on
                raise
        if not self._queue:
            return None, True
        item = self._queue.popleft()
        now = self._clock.now()
        self._processing[item] = now
        self._dirty.discard(item)
        self._metrics.got(len(self._dirty), now - self._added_at.pop(item, now))
        return item, False

    def done(self, item: T) -> None:
        """Mark `item` finished; if it was added meanwhile, queue it again."""
        started = self._processing.pop(item, None)
        if started is None:
            return
        self._metrics.done(self._clock.now() - started)
        if item in self._dirty:
            self._queue.append(item)
            self._wake_one()
        if not self._processing:
            _resolve_all(self._drain_waiters)

    def shut_down(self) -> None:
        """Refuse new items and wake every getter; items already queued are still handed out."""
        self._shutting_down = True
        _resolve_all(self._getters)

    async def shut_down_with_drain(self) -> None:
        """Shut down, then wait until every item handed out so far is done."""
        self.shut_down()
        while self._processing:
            waiter: asyncio.Future[None] = asyncio.get_running_loop().create_future()
            self._drain_waiters.append(waiter)
            await waiter

    def _wake_one(self) -> None:
        while self._getters:
            waiter = self._getters.popleft()
            if not waiter.done():
                waiter.set_result(None)
                return

    def _in_flight(self) -> InFlight:
        now = self._clock.now()
        ages = [now - started for started in self._processing.values()]
        return InFlight(unfinished=sum(ages), longest=max(ages, default=0.0))


def _resolve_all(waiters: deque[asyncio.Future[None]] | list[asyncio.Future[None]]) -> None:
    for waiter in waiters:
        if not waiter.done():
            waiter.set_result(None)
    waiters.clear()
