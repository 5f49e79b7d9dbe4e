"""The one bounded set the controller keeps per process: what it has already seen or done, the newest
`capacity` entries of it, so a long-lived leader's memory stays bounded (a UID is never reused, and an
entry forgotten only costs a repeated, harmless step)."""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import Generic, TypeVar

T = TypeVar("T")


def _itself(item: object) -> Hashable:
    return item


class BoundedSet(Generic[T]):
    """Entries in the order last offered; beyond `capacity` the oldest is forgotten. An empty entry ("",
    a job without a UID) is never kept. `key` maps an item to what is remembered of it."""

    def __init__(self, capacity: int = 20_000, key: Callable[[T], Hashable] = _itself) -> None:
        self._entries: OrderedDict[Hashable, None] = OrderedDict()
        self._capacity = capacity
        self._key = key

    def add(self, item: T) -> None:
        if not item:
            return
        entry = self._key(item)
        self._entries[entry] = None
        self._entries.move_to_end(entry)
        while len(self._entries) > self._capacity:
            self._entries.popitem(last=False)

    def seen(self, item: T) -> bool:
        return bool(item) and self._key(item) in self._entries

    def __contains__(self, item: T) -> bool:
        return self.seen(item)

    def first(self, item: T) -> bool:
        """True the first time `item` is offered; it is remembered (again as the newest) either way."""
        new = bool(item) and not self.seen(item)
        self.add(item)
        return new
