"""A token bucket: `qps` tokens a second, at most `burst` saved up.

One implementation for both of its users: the API client's throttle (kube/ratelimit.py, client-go's
--kube-api-qps/--kube-api-burst) and the work queue's overall retry limit (workqueue/rate_limiters.py).
A reservation is kept even when its token does not exist yet, like golang.org/x/time/rate's
Reserve().Delay(): the next caller queues behind it instead of being told the same wait.
"""

from __future__ import annotations

from mpioperator.clock import Clock, RealClock


class TokenBucket:
    def __init__(self, qps: float, burst: int, clock: Clock | None = None) -> None:
        if qps <= 0 or burst < 1:
            raise ValueError(f"a token bucket needs qps > 0 and burst >= 1, got qps={qps} burst={burst}")
        self.qps = qps
        self.burst = burst
        self._clock: Clock = clock or RealClock()
        self._tokens = float(burst)
        self._last: float | None = None
        # Tokens handed out, and the seconds their takers were told to wait, since the bucket was made.
        self.taken = 0
        self.waited = 0.0

    def reserve(self) -> float:
        """Take a token (possibly one not yet minted) and return how long to wait for it."""
        now = self._clock.now()
        if self._last is not None:
            self._tokens = min(float(self.burst), self._tokens + (now - self._last) * self.qps)
        self._last = now
        self._tokens -= 1.0
        delay = 0.0 if self._tokens >= 0 else -self._tokens / self.qps
        self.taken += 1
        self.waited += delay
        return delay

    def try_take(self) -> bool:
        """Take a token only if one exists now; False (and nothing taken) when the caller would wait."""
        now = self._clock.now()
        if self._last is not None:
            self._tokens = min(float(self.burst), self._tokens + (now - self._last) * self.qps)
        self._last = now
        if self._tokens < 1.0:
            return False
        self._tokens -= 1.0
        self.taken += 1
        return True

    async def acquire(self) -> float:
        """Take a token and wait until it exists; returns the wait."""
        delay = self.reserve()
        if delay > 0:
            await self._clock.sleep(delay)
        return delay
