"""Client-side request throttling (client-go's --kube-api-qps/--kube-api-burst), which the Python
client lacks: a token bucket that makes callers wait their turn rather than fail."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable


class TokenBucket:
    def __init__(
        self,
        qps: float,
        burst: int,
        *,
        now: Callable[[], float] | None = None,
        sleep: Callable[[float], Awaitable[None]] | None = None,
    ) -> None:
        if qps <= 0 or burst < 1:
            raise ValueError("qps must be > 0 and burst >= 1")
        self.qps = qps
        self.burst = burst
        self._now = now or (lambda: asyncio.get_running_loop().time())
        self._sleep = sleep or asyncio.sleep
        self._tokens = float(burst)
        self._last: float | None = None

    def reserve(self) -> float:
        """Take a token (possibly one not yet minted) and return how long to wait for it."""
        now = self._now()
        if self._last is not None:
            self._tokens = min(float(self.burst), self._tokens + (now - self._last) * self.qps)
        self._last = now
        self._tokens -= 1.0
        return 0.0 if self._tokens >= 0 else -self._tokens / self.qps

    async def acquire(self) -> float:
        delay = self.reserve()
        if delay > 0:
            await self._sleep(delay)
        return delay
