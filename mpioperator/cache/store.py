"""An indexed object store: items by key plus secondary indices, for one asyncio loop (no locks).

Objects handed in are kept as they are and objects handed out are the stored ones: callers must treat
them as read-only (deep-copy before editing), or the cache silently diverges from the server.
"""

from __future__ import annotations

import builtins
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field

from mpioperator.api.objects import Obj
from mpioperator.cache.keys import make_key, object_key

IndexFunc = Callable[[Obj], list[str]]

NAMESPACE_INDEX = "namespace"
CONTROLLER_OWNER_INDEX = "controller-owner"


def namespace_index(obj: Obj) -> list[str]:
    namespace = (obj.get("metadata") or {}).get("namespace")
    return [namespace] if namespace else []


def controller_owner_index(obj: Obj) -> list[str]:
    """The uid of the owner reference marked controller=true, if any."""
    for ref in (obj.get("metadata") or {}).get("ownerReferences") or ():
        if ref.get("controller") and ref.get("uid"):
            return [str(ref["uid"])]
    return []


def default_indexers() -> dict[str, IndexFunc]:
    return {NAMESPACE_INDEX: namespace_index, CONTROLLER_OWNER_INDEX: controller_owner_index}


@dataclass(slots=True)
class ReplaceResult:
    """What a replace changed: (old or None, new) for every listed object in list order, and the
    (key, last cached object) of every object that disappeared."""

    changed: list[tuple[Obj | None, Obj]] = field(default_factory=list)
    deleted: list[tuple[str, Obj]] = field(default_factory=list)


class Store:
    """Items keyed `namespace/name` with indices: index name -> index value -> set of keys."""

    def __init__(self, indexers: Mapping[str, IndexFunc] | None = None) -> None:
        self._items: dict[str, Obj] = {}
        self._indexers: dict[str, IndexFunc] = default_indexers()
        self._indices: dict[str, dict[str, set[str]]] = {name: {} for name in self._indexers}
        # Per index value, the number of the last write touching an object under it: a reader that
        # memoizes what it computed from an index value's objects knows in O(1) whether they changed.
        self._writes = 0
        self._versions: dict[tuple[str, str], int] = {}
        if indexers:
            self.add_indexers(indexers)

    # Writes. Each returns the previous object so callers can tell adds from updates.

    def add(self, obj: Obj) -> Obj | None:
        return self.update(obj)

    def update(self, obj: Obj) -> Obj | None:
        return self._put(object_key(obj), obj)

    def _put(self, key: str, obj: Obj) -> Obj | None:
        old = self._items.get(key)
        self._items[key] = obj
        self._writes += 1
        if old is None:
            # A new key: nothing to take out of the indices (a first list is all new keys).
            for name, func in self._indexers.items():
                self._add_to_index(name, key, func(obj))
        else:
            self._reindex(key, old, obj)
        return old

    def delete(self, obj: Obj) -> Obj | None:
        return self.delete_by_key(object_key(obj))

    def delete_by_key(self, key: str) -> Obj | None:
        old = self._items.pop(key, None)
        if old is not None:
            self._writes += 1
            self._reindex(key, old, None)
        return old

    def replace(self, objs: Iterable[Obj]) -> ReplaceResult:
        """Make the store hold exactly `objs`; report what each one replaced and what vanished."""
        result = ReplaceResult()
        seen: set[str] = set()
        for obj in objs:
            key = object_key(obj)
            seen.add(key)
            result.changed.append((self._put(key, obj), obj))
        for key in [k for k in self._items if k not in seen]:
            old = self.delete_by_key(key)
            assert old is not None
            result.deleted.append((key, old))
        return result

    # Reads.

    def get(self, namespace: str | None, name: str) -> Obj | None:
        return self._items.get(make_key(namespace, name))

    def get_by_key(self, key: str) -> Obj | None:
        return self._items.get(key)

    def list(self) -> builtins.list[Obj]:
        return list(self._items.values())

    def keys(self) -> builtins.list[str]:
        return list(self._items)

    def __len__(self) -> int:
        return len(self._items)

    def __contains__(self, key: object) -> bool:
        return key in self._items

    # Indices.

    def add_indexers(self, indexers: Mapping[str, IndexFunc]) -> None:
        """Register more indices; existing items are indexed at once."""
        clash = set(indexers) & set(self._indexers)
        if clash:
            raise ValueError(f"indexer(s) already registered: {sorted(clash)}")
        for name, func in indexers.items():
            self._indexers[name] = func
            self._indices[name] = {}
            for key, obj in self._items.items():
                self._add_to_index(name, key, func(obj))

    def index_names(self) -> builtins.list[str]:
        return list(self._indexers)

    def by_index(self, index_name: str, value: str) -> builtins.list[Obj]:
        return [self._items[key] for key in self.index_keys(index_name, value)]

    def index_keys(self, index_name: str, value: str) -> builtins.list[str]:
        try:
            index = self._indices[index_name]
        except KeyError:
            raise KeyError(f"no index named {index_name!r}") from None
        return sorted(index.get(value, ()))

    def index_values(self, index_name: str) -> builtins.list[str]:
        return sorted(self._indices[index_name])

    def _reindex(self, key: str, old: Obj | None, new: Obj | None) -> None:
        for name, func in self._indexers.items():
            old_values = func(old) if old is not None else []
            new_values = func(new) if new is not None else []
            self._touch(name, old_values)
            if old_values == new_values:
                continue  # the usual update: nothing indexed changed
            index = self._indices[name]
            for value in set(old_values) - set(new_values):
                keys = index.get(value)
                if keys is not None:
                    keys.discard(key)
                    if not keys:
                        # Short-lived index values (e.g. owner uids) would otherwise leak empty sets.
                        del index[value]
                        self._versions.pop((name, value), None)
            self._add_to_index(name, key, new_values)

    def _add_to_index(self, name: str, key: str, values: builtins.list[str]) -> None:
        index = self._indices[name]
        for value in values:
            index.setdefault(value, set()).add(key)
        self._touch(name, values)

    def _touch(self, name: str, values: builtins.list[str]) -> None:
        for value in values:
            self._versions[(name, value)] = self._writes

    def index_version(self, index_name: str, value: str) -> int:
        """A number that differs whenever an object under `value` was added, changed or removed since it
        was last read (0 for a value no object has: its objects, none, are the same as then)."""
        return self._versions.get((index_name, value), 0)
