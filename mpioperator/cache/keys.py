"""Cache keys (`namespace/name`, or `name` when cluster-scoped) and the relist tombstone."""

from __future__ import annotations

from dataclasses import dataclass

from mpioperator.api.objects import Obj


def object_key(obj: Obj) -> str:
    """The store key of an object: `namespace/name`, or `name` for cluster-scoped objects."""
    meta = obj.get("metadata") or {}
    name = str(meta.get("name") or "")
    namespace = meta.get("namespace")
    return f"{namespace}/{name}" if namespace else name


def split_key(key: str) -> tuple[str, str]:
    """(namespace, name); the namespace is "" for cluster-scoped keys."""
    namespace, sep, name = key.partition("/")
    if not sep:
        return "", key
    if "/" in name:
        raise ValueError(f"unexpected key format: {key!r}")
    return namespace, name


def make_key(namespace: str | None, name: str) -> str:
    return f"{namespace}/{name}" if namespace else name


@dataclass(frozen=True, slots=True)
class DeletedFinalStateUnknown:
    """A delete the informer inferred on relist: it missed the DELETED event, so `obj` is the last
    state it had cached, which may be stale. Delete handlers must unwrap it."""

    key: str
    obj: Obj


def deleted_object(obj: Obj | DeletedFinalStateUnknown) -> Obj:
    """The object of a delete notification, unwrapping a tombstone."""
    return obj.obj if isinstance(obj, DeletedFinalStateUnknown) else obj
