"""Which unexpected errors have been reported with their traceback already.

A sync that fails on a bug fails the same way on every retry; its traceback is worth one log entry, not
one per retry of every job it hits. "The same" is the same exception type and message raised at the
same place.
"""

from __future__ import annotations

import traceback
from collections import OrderedDict

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


class FirstSeen:
    """Remembers the newest `capacity` error signatures; `first(exc)` is True only for a new one."""

    def __init__(self, capacity: int = 256) -> None:
        self._seen: OrderedDict[Signature, None] = OrderedDict()
        self._capacity = capacity

    def first(self, exc: BaseException) -> bool:
        key = signature(exc)
        if key in self._seen:
            self._seen.move_to_end(key)
            return False
        self._seen[key] = None
        while len(self._seen) > self._capacity:
            self._seen.popitem(last=False)
        return True
