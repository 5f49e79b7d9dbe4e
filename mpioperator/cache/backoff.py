"""Exponential backoff with jitter for reflector retries (client-go: 800 ms -> 30 s, reset after 2 min)."""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import KW_ONLY, dataclass, field

from mpioperator.clock import Clock


@dataclass(slots=True)
class Backoff:
    """Each `next_delay()` doubles the base delay up to `cap`; a delay is drawn from [base/2, base] so
    that many reflectors failing together (an apiserver restart) do not retry in lockstep, while never
    retrying in a hot loop. After `reset_after` seconds without a failure the base starts over."""

    clock: Clock
    _: KW_ONLY
    initial: float = 0.8
    cap: float = 30.0
    factor: float = 2.0
    reset_after: float = 120.0
    rand: Callable[[], float] = random.random
    # Failures since the last reset, and when the last one was.
    failures: int = field(default=0, init=False)
    _last: float | None = field(default=None, init=False, repr=False)

    def next_delay(self) -> float:
        now = self.clock.now()
        if self._last is not None and now - self._last >= self.reset_after:
            self.failures = 0
        base = min(self.cap, self.initial * self.factor ** min(self.failures, 64))
        self.failures += 1
        self._last = now
        return base * (0.5 + 0.5 * self.rand())
