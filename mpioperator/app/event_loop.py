"""The event loop the operator runs on: uvloop's where it is installed, asyncio's own otherwise.

Most of the operator's CPU per job is spent moving bytes: the watches' TLS records in, the writes out. Under
asyncio's default loop that path runs in Python (sslproto.py, the selector loop); uvloop runs it in libuv
and Cython. On the paced benchmark it took 45-49 ms of CPU per job against 54-56 ms on the default loop,
and 5 MiB less memory (docs/decisions-local.md L54). uvloop has no Windows build, where the package is
installed without it (the `kubectl mpijob` plugin's users); the operator itself runs in a Linux image.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine
from typing import Any, TypeVar

T = TypeVar("T")


def loop_factory() -> Callable[[], asyncio.AbstractEventLoop] | None:
    """uvloop's loop maker, or None (asyncio's default) where uvloop is not installed."""
    try:
        import uvloop
    except ImportError:
        return None
    return uvloop.new_event_loop


def loop_name(loop: asyncio.AbstractEventLoop) -> str:
    """What the start-up log calls the loop: `uvloop` or `asyncio`."""
    return "uvloop" if type(loop).__module__.startswith("uvloop") else "asyncio"


def run(main: Coroutine[Any, Any, T]) -> T:
    """asyncio.run on the loop above."""
    with asyncio.Runner(loop_factory=loop_factory()) as runner:
        return runner.run(main)
