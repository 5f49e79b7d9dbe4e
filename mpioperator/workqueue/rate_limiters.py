"""How long an item waits before it is retried: per-item backoff, a global token bucket, and mixes."""

from __future__ import annotations

from collections.abc import Hashable
from typing import Protocol

from mpioperator.clock import Clock
from mpioperator.tokenbucket import TokenBucket


class RateLimiter(Protocol):
    def when(self, item: Hashable) -> float:
        """Seconds to wait before `item` may be processed again; counts as one more requeue."""
        ...

    def forget(self, item: Hashable) -> None: ...

    def num_requeues(self, item: Hashable) -> int: ...


class ItemExponentialFailureRateLimiter:
    """base * 2**failures, capped at max_delay; each item has its own failure count."""

    def __init__(self, base_delay: float, max_delay: float) -> None:
        self.base_delay = base_delay
        self.max_delay = max_delay
        self._failures: dict[Hashable, int] = {}

    def when(self, item: Hashable) -> float:
        exp = self._failures.get(item, 0)
        self._failures[item] = exp + 1
        if exp >= 1024:  # 2.0**exp would raise OverflowError; the cap applied long before
            return self.max_delay
        return min(self.base_delay * 2.0**exp, self.max_delay)

    def forget(self, item: Hashable) -> None:
        self._failures.pop(item, None)

    def num_requeues(self, item: Hashable) -> int:
        return self._failures.get(item, 0)


class ItemFastSlowRateLimiter:
    """`fast_delay` for the first `max_fast_attempts` tries of an item, `slow_delay` after."""

    def __init__(self, fast_delay: float, slow_delay: float, max_fast_attempts: int) -> None:
        self.fast_delay = fast_delay
        self.slow_delay = slow_delay
        self.max_fast_attempts = max_fast_attempts
        self._attempts: dict[Hashable, int] = {}

    def when(self, item: Hashable) -> float:
        attempts = self._attempts.get(item, 0) + 1
        self._attempts[item] = attempts
        return self.fast_delay if attempts <= self.max_fast_attempts else self.slow_delay

    def forget(self, item: Hashable) -> None:
        self._attempts.pop(item, None)

    def num_requeues(self, item: Hashable) -> int:
        return self._attempts.get(item, 0)


class BucketRateLimiter:
    """A token bucket over all items (qps refill, `burst` capacity); a call reserves a token and
    returns how long until that token exists."""

    def __init__(self, qps: float, burst: int, clock: Clock | None = None) -> None:
        self._bucket = TokenBucket(qps, burst, clock)
        self.qps = qps
        self.burst = burst

    def when(self, item: Hashable) -> float:
        return self._bucket.reserve()

    def forget(self, item: Hashable) -> None:
        pass

    def num_requeues(self, item: Hashable) -> int:
        return 0


class MaxOfRateLimiter:
    """The longest wait any of its limiters asks for (every limiter sees every call)."""

    def __init__(self, *limiters: RateLimiter) -> None:
        if not limiters:
            raise ValueError("MaxOfRateLimiter needs at least one limiter")
        self.limiters = limiters

    def when(self, item: Hashable) -> float:
        return max(limiter.when(item) for limiter in self.limiters)

    def forget(self, item: Hashable) -> None:
        for limiter in self.limiters:
            limiter.forget(item)

    def num_requeues(self, item: Hashable) -> int:
        return max(limiter.num_requeues(item) for limiter in self.limiters)


def default_controller_rate_limiter(
    *, qps: float = 10.0, burst: int = 100, clock: Clock | None = None
) -> MaxOfRateLimiter:
    """Upstream's queue limiter: per-item 5 ms .. 1000 s backoff, and 10 qps / 100 burst overall."""
    return MaxOfRateLimiter(
        ItemExponentialFailureRateLimiter(0.005, 1000.0),
        BucketRateLimiter(qps, burst, clock),
    )
