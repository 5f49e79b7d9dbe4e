"""The controller's queue: delaying, de-duplicating, and rate limited for retries."""

from __future__ import annotations

from collections.abc import Hashable
from typing import TypeVar

from mpioperator.clock import Clock
from mpioperator.workqueue.delaying import DelayingQueue
from mpioperator.workqueue.metrics import QueueMetrics
from mpioperator.workqueue.rate_limiters import RateLimiter

T = TypeVar("T", bound=Hashable)


class RateLimitingQueue(DelayingQueue[T]):
    def __init__(
        self,
        rate_limiter: RateLimiter,
        *,
        clock: Clock | None = None,
        name: str = "",
        metrics: QueueMetrics | None = None,
    ) -> None:
        super().__init__(clock=clock, metrics=metrics)
        self.name = name
        self.rate_limiter = rate_limiter

    def add_rate_limited(self, item: T) -> None:
        """Add `item` after the limiter's delay; this counts as one more requeue of it."""
        self.add_after(item, self.rate_limiter.when(item))

    def forget(self, item: T) -> None:
        """Stop tracking `item`'s failures (call after a successful sync); it stays queued if it is."""
        self.rate_limiter.forget(item)

    def num_requeues(self, item: T) -> int:
        return self.rate_limiter.num_requeues(item)
