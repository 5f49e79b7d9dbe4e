"""A queue whose items can be added after a delay; for one item the earliest deadline wins."""

from __future__ import annotations

import asyncio
import contextlib
import heapq
import itertools
from collections.abc import Hashable
from typing import TypeVar

from mpioperator.clock import Clock
from mpioperator.workqueue.metrics import QueueMetrics
from mpioperator.workqueue.queue import Queue

T = TypeVar("T", bound=Hashable)


class DelayingQueue(Queue[T]):
    def __init__(self, *, clock: Clock | None = None, metrics: QueueMetrics | None = None) -> None:
        super().__init__(clock=clock, metrics=metrics)
        self._ready_at: dict[T, float] = {}
        self._heap: list[tuple[float, int, T]] = []
        self._seq = itertools.count()
        self._timer: asyncio.Task[None] | None = None
        self._timer_deadline = float("inf")

    @property
    def waiting(self) -> int:
        """Items whose delay has not passed yet."""
        return len(self._ready_at)

    def delay_left(self, item: T) -> float | None:
        """Seconds until `item` is ready, or None when it is not waiting."""
        ready_at = self._ready_at.get(item)
        return None if ready_at is None else max(0.0, ready_at - self._clock.now())

    def add_after(self, item: T, delay: float, *, retry: bool = True) -> None:
        """Add `item` once `delay` seconds have passed; an earlier pending deadline for it wins.

        client-go counts every delayed add as a retry; `retry=False` is for a delay that is not one.
        """
        if self.shutting_down:
            return
        if retry:
            self._metrics.retried()
        if delay <= 0:
            self.add(item)
            return
        ready_at = self._clock.now() + delay
        current = self._ready_at.get(item)
        if current is not None and current <= ready_at:
            return
        self._ready_at[item] = ready_at
        heapq.heappush(self._heap, (ready_at, next(self._seq), item))
        if ready_at < self._timer_deadline:
            self._arm(ready_at)

    def shut_down(self) -> None:
        super().shut_down()
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        self._timer_deadline = float("inf")
        self._heap.clear()
        self._ready_at.clear()

    async def close(self) -> None:
        """Shut down, and wait until the delay timer has ended: no task of the queue outlives it."""
        timer = self._timer
        self.shut_down()
        if timer is not None:
            with contextlib.suppress(asyncio.CancelledError):
                await timer

    def _arm(self, deadline: float) -> None:
        if self._timer is not None:
            self._timer.cancel()
        self._timer_deadline = deadline
        self._timer = asyncio.get_running_loop().create_task(self._fire_at(deadline))

    async def _fire_at(self, deadline: float) -> None:
        await self._clock.sleep(deadline - self._clock.now())
        self._timer = None
        self._timer_deadline = float("inf")
        now = max(self._clock.now(), deadline)  # a real timer may fire a clock tick early
        while self._heap and self._heap[0][0] <= now:
            ready_at, _, item = heapq.heappop(self._heap)
            if self._ready_at.get(item) == ready_at:
                del self._ready_at[item]
                self.add(item)
        while self._heap and self._ready_at.get(self._heap[0][2]) != self._heap[0][0]:
            heapq.heappop(self._heap)  # superseded by an earlier deadline for the same item
        if self._heap:
            self._arm(self._heap[0][0])
