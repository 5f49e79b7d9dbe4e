"""Which unexpected errors have been reported with their traceback already.

A sync that fails on a bug fails the same way on every retry; its traceback is worth one log entry, not
one per retry of every job it hits. "The same" is the same exception type and message raised at the
same place.
"""

from __future__ import annotations

import traceback

from mpioperator.controller.bounded import BoundedSet

Signature = tuple[str, str, str, int]


def signature(exc: BaseException) -> Signature:
    frames = traceback.extract_tb(exc.__traceback__)
    where = frames[-1] if frames else None
    return (
        type(exc).__qualname__,
        str(exc),
        where.filename if where else "",
        (where.lineno or 0) if where else 0,
    )


def FirstSeen(capacity: int = 256) -> BoundedSet[BaseException]:
    """The newest `capacity` error signatures; `first(exc)` is True only for a new one."""
    return BoundedSet(capacity, key=signature)
