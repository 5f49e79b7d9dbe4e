"""Writes an MPIJob's status only when it differs, and never over a status newer than the one it was
computed from (decisions-local L42)."""

from __future__ import annotations

from collections import OrderedDict

from mpioperator.api.objects import Obj
from mpioperator.controller.errors import StatusConflict, SyncError
from mpioperator.controller.ports import Writer
from mpioperator.kube import errors
from mpioperator.kube.resources import MPIJOBS


class RecentStatusWrites:
    """Each MPIJob's newest object we know of, while the cache still shows a version it replaced.

    The informer delivers our own writes a moment later; a sync in between would compute from the old
    object and PUT with its stale resourceVersion, only to get a Conflict (and, for a job just created,
    repeat its Created event). What stands in is the object our last status write returned, or the one
    read after a Conflict. It stands in while the cache holds one of the versions it replaced (ours
    written one after another before the cache showed the first, say); any other version means the cache
    moved on, and the cache wins.
    """

    def __init__(self, capacity: int = 10_000) -> None:
        self._by_uid: OrderedDict[str, tuple[frozenset[str], Obj]] = OrderedDict()
        self._capacity = capacity

    def remember(self, replaced: Obj, newer: Obj) -> None:
        uid = newer.get("metadata", {}).get("uid")
        version = replaced.get("metadata", {}).get("resourceVersion")
        if not uid or not version:
            return
        newer.get("metadata", {}).pop("managedFields", None)
        older = frozenset((version,))
        entry = self._by_uid.get(uid)
        if entry is not None and entry[1].get("metadata", {}).get("resourceVersion") == version:
            older |= entry[0]  # `replaced` was itself standing in: what it replaced is older still
        self._by_uid[uid] = (older, newer)
        self._by_uid.move_to_end(uid)
        while len(self._by_uid) > self._capacity:
            self._by_uid.popitem(last=False)

    def freshest(self, cached: Obj) -> Obj:
        meta = cached.get("metadata", {})
        entry = self._by_uid.get(meta.get("uid", ""))
        if entry is None:
            return cached
        older, newer = entry
        if meta.get("resourceVersion") in older:
            return newer
        del self._by_uid[meta["uid"]]
        return cached


async def write_if_changed(
    writer: Writer, cached: Obj, status: Obj, recent: RecentStatusWrites | None = None
) -> bool:
    """PUT `status` to mpijobs/status with `cached`'s resourceVersion unless `cached` already has it; True
    if written.

    A Conflict means the job changed after `cached` was read, maybe by another writer of its status (Kueue,
    a second controller, an admin): the status computed from `cached` is not put over it, as upstream's
    UpdateStatus does not. The newer object is read once so that the next sync computes from it at once
    instead of waiting for the cache, and StatusConflict asks for that sync.
    """
    if (cached.get("status") or {}) == status:
        return False
    target = {**cached, "status": status}
    meta = cached["metadata"]
    try:
        written = await writer.update_status(MPIJOBS, target, meta.get("namespace"))
    except errors.NotFound:
        return False
    except errors.Conflict as exc:
        if not await _read_newer(writer, cached, recent):
            return False
        raise StatusConflict(f"updating status: {exc.server_message}") from exc
    except errors.ApiError as exc:
        raise SyncError(f"updating status: {exc.server_message}") from exc
    if recent is not None:
        recent.remember(cached, written)
    return True


async def _read_newer(writer: Writer, cached: Obj, recent: RecentStatusWrites | None) -> bool:
    """Remember the server's newer object for the next sync; False when the job is gone or was replaced by
    another of its name meanwhile: nothing is left to write, and the informer delivers the change."""
    meta = cached["metadata"]
    try:
        fresh = await writer.get(MPIJOBS, meta["name"], meta.get("namespace"))
    except errors.NotFound:
        return False
    except errors.ApiError as exc:
        raise SyncError(f"reading the job after a status conflict: {exc.server_message}") from exc
    if fresh.get("metadata", {}).get("uid") != meta.get("uid"):
        return False
    if recent is not None:
        recent.remember(cached, fresh)
    return True
