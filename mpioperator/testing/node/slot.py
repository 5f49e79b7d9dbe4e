"""The host's slot for one real node per bridge: an exclusive lock file that other runs wait on.

The lock is counted per process, so a test can hold the slot around a whole node's life (its host snapshot
before start-up and after teardown included) while the node takes the same slot inside it: otherwise a
waiting run elsewhere would start its own node on the bridge the moment ours stopped, and the check after
teardown would count that node's bridge, rules and cgroups as ours.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TextIO

LOCK_DIR = Path("/run/lock")


class SlotBusy(RuntimeError):
    """Another process kept the slot past the timeout; the message names it and the way out."""


@dataclass
class _Held:
    handle: TextIO
    count: int


_held: dict[str, _Held] = {}


def acquire(tag: str, timeout: float = 900.0) -> None:
    """Take the slot named `tag`, waiting up to `timeout` seconds for another process to give it up."""
    held = _held.get(tag)
    if held is not None:
        held.count += 1
        return
    LOCK_DIR.mkdir(parents=True, exist_ok=True)
    path = LOCK_DIR / f"{tag}.lock"
    handle = open(path, "a+")  # noqa: SIM115 - held until the last release()
    deadline = time.monotonic() + timeout
    told = False
    while True:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
            break
        except BlockingIOError:
            if time.monotonic() > deadline:
                handle.close()
                raise SlotBusy(
                    f"another real node holds {path} (owner pid {_read_owner(path)}); "
                    f"stop it or set MPIOPERATOR_NODE_BRIDGE and MPIOPERATOR_NODE_SUBNET to other values"
                ) from None
            if not told:
                print(f"waiting for {path}, held by pid {_read_owner(path)}", file=sys.stderr)
                told = True
            time.sleep(1)
    handle.seek(0)
    handle.truncate()
    handle.write(str(os.getpid()))
    handle.flush()
    _held[tag] = _Held(handle, 1)


def release(tag: str) -> None:
    held = _held.get(tag)
    if held is None:
        return
    held.count -= 1
    if held.count == 0:
        del _held[tag]
        held.handle.close()


@contextlib.contextmanager
def holding(tag: str, timeout: float = 900.0) -> Iterator[None]:
    acquire(tag, timeout)
    try:
        yield
    finally:
        release(tag)


def _read_owner(path: Path) -> str:
    try:
        return path.read_text().strip() or "?"
    except OSError:
        return "?"
