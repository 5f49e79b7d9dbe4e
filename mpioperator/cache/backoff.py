"""Exponential backoff with jitter for reflector retries (client-go: 800 ms -> 30 s, reset after 2 min)."""

from __future__ import annotations

import random
from collections.abc import Callable

from mpioperator.clock import Clock


class Backoff:
    """Each `next_delay()` doubles the base delay up to `cap`; a delay is drawn from [base/2, base] so
    that many reflectors failing together (an apiserver restart) do not retry in lockstep, while never
    retrying in a hot loop. After `reset_after` seconds without a failure the base starts over."""

    def __init__(
        self,
        clock: Clock,
        *,
        initial: float = 0.8,
        cap: float = 30.0,
        factor: float = 2.0,
        reset_after: float = 120.0,
        rand: Callable[[], float] = random.random,
    ) -> None:
        self._clock = clock
        self._initial = initial
        self._cap = cap
        self._factor = factor
        self._reset_after = reset_after
        self._rand = rand
        self._failures = 0
        self._last: float | None = None

    def next_delay(self) -> float:
        now = self._clock.now()
        if self._last is not None and now - self._last >= self._reset_after:
            self._failures = 0
        base = min(self._cap, self._initial * self._factor ** min(self._failures, 64))
        self._failures += 1
        self._last = now
        return base * (0.5 + 0.5 * self._rand())

    @property
    def failures(self) -> int:
        return self._failures
