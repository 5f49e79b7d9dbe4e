"""Wait for a condition instead of sleeping; on timeout, say what was last seen."""

from __future__ import annotations

import asyncio
import contextlib
import threading
import time
from collections.abc import Awaitable, Callable
from typing import Any, Generic, TypeVar

T = TypeVar("T")


class WaitTimeout(AssertionError):
    pass


class ProbeAborted(Exception):
    """Raised by a probe when waiting longer cannot help (e.g. the process it polls has died)."""


def _describe(last: object, error: BaseException | None) -> str:
    if error is not None:
        return f"last attempt raised {type(error).__name__}: {error}"
    return f"last seen: {last!r}"


class _Attempts(Generic[T]):
    """A probe asked again and again: what it last answered or raised, for the message on giving up."""

    def __init__(self, probe: Callable[[], T], done: Callable[[T], bool]) -> None:
        self._probe = probe
        self._done = done
        self.last: object = None
        self.error: BaseException | None = None

    def ask(self) -> list[T]:
        """[value] once the probe's value is done, else []; a probe that raises is one more 'not yet'."""
        try:
            value = self._probe()
            self.error = None
            if self._done(value):
                return [value]
            self.last = value
        except ProbeAborted:
            raise
        except Exception as exc:  # a probe failing is one more 'not yet'
            self.error = exc
        return []

    def describe(self) -> str:
        return _describe(self.last, self.error)


def wait_for(
    probe: Callable[[], T],
    *,
    timeout: float,
    what: str,
    interval: float = 0.1,
    done: Callable[[T], bool] = bool,
) -> T:
    """Call `probe` until `done(result)`; exceptions from the probe count as 'not yet'."""
    deadline = time.monotonic() + timeout
    attempts = _Attempts(probe, done)
    while True:
        answered = attempts.ask()
        if answered:
            return answered[0]
        if time.monotonic() >= deadline:
            raise WaitTimeout(f"timed out after {timeout:.0f}s waiting for {what}; {attempts.describe()}")
        time.sleep(interval)


def wait_while_progressing(
    probe: Callable[[], T],
    progress: Callable[[], object],
    *,
    idle_timeout: float,
    limit: float,
    what: str,
    interval: float = 2.0,
    clock: Callable[[], float] = time.monotonic,
    sleep: Callable[[float], None] = time.sleep,
) -> T:
    """Call `probe` until it returns something true, for as long as `progress()` keeps changing: give up
    when it has not changed for `idle_timeout` seconds, or after `limit` in all.

    For work whose speed depends on what else the machine does (training on shared cores): a slow run that
    keeps moving is waited for, a stalled one fails after `idle_timeout` instead of a fixed budget."""
    started = clock()
    moved = started
    seen: object = None
    attempts = _Attempts(probe, bool)
    while True:
        answered = attempts.ask()
        if answered:
            return answered[0]
        with contextlib.suppress(Exception):  # progress unknown this round: the idle clock runs on
            now_seen = progress()
            if now_seen != seen:
                seen, moved = now_seen, clock()
        now = clock()
        if now - moved >= idle_timeout:
            raise WaitTimeout(
                f"gave up waiting for {what}: no progress for {now - moved:.0f}s "
                f"(after {now - started:.0f}s in all); {attempts.describe()}"
            )
        if now - started >= limit:
            raise WaitTimeout(
                f"gave up waiting for {what} after {now - started:.0f}s, still progressing; "
                f"{attempts.describe()}"
            )
        sleep(interval)


async def async_wait_for(
    probe: Callable[[], Awaitable[T]],
    *,
    timeout: float,
    what: str,
    interval: float = 0.1,
    done: Callable[[T], bool] = bool,
) -> T:
    deadline = time.monotonic() + timeout
    last: object = None
    error: BaseException | None = None
    while True:
        try:
            value = await probe()
            error = None
            if done(value):
                return value
            last = value
        except ProbeAborted:
            raise
        except Exception as exc:
            error = exc
        if time.monotonic() >= deadline:
            raise WaitTimeout(f"timed out after {timeout:.0f}s waiting for {what}; {_describe(last, error)}")
        await asyncio.sleep(interval)


def in_thread(call: Callable[[], Any]) -> dict[str, Any]:
    """Run `call` on a daemon thread of its own; the dict gets its "result" or its "error" once it returns
    (empty until then), for a test that must not hang with a call that might."""
    outcome: dict[str, Any] = {}

    def run() -> None:
        try:
            outcome["result"] = call()
        except Exception as exc:  # handed to the test to look at
            outcome["error"] = exc

    threading.Thread(target=run, name="test-call", daemon=True).start()
    return outcome
