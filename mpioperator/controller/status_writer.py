"""Writes an MPIJob's status only when it differs, riding out write conflicts without a requeue."""

from __future__ import annotations

from collections import OrderedDict

import structlog
from tenacity import AsyncRetrying, retry_if_exception_type, stop_after_attempt, wait_random_exponential

from mpioperator.api.objects import Obj, json_copy
from mpioperator.controller.errors import SyncError
from mpioperator.controller.ports import Writer
from mpioperator.kube import errors
from mpioperator.kube.resources import MPIJOBS

log = structlog.get_logger(__name__)

_ATTEMPTS = 4


class RecentStatusWrites:
    """Each MPIJob's object as our last status write returned it, until the cache shows that write.

    The informer delivers our own writes a moment later; a sync in between would compute from the old
    object and PUT with its stale resourceVersion, only to get a Conflict (and, for a job just created,
    repeat its Created event). The cached object is replaced by the newer one we wrote while the cache
    still holds exactly the version that write replaced; any other version means the cache moved on.
    """

    def __init__(self, capacity: int = 10_000) -> None:
        self._by_uid: OrderedDict[str, tuple[str, Obj]] = OrderedDict()
        self._capacity = capacity

    def remember(self, replaced: Obj, written: Obj) -> None:
        uid = written.get("metadata", {}).get("uid")
        version = replaced.get("metadata", {}).get("resourceVersion")
        if not uid or not version:
            return
        written.get("metadata", {}).pop("managedFields", None)
        self._by_uid[uid] = (version, written)
        self._by_uid.move_to_end(uid)
        while len(self._by_uid) > self._capacity:
            self._by_uid.popitem(last=False)

    def freshest(self, cached: Obj) -> Obj:
        meta = cached.get("metadata", {})
        entry = self._by_uid.get(meta.get("uid", ""))
        if entry is None:
            return cached
        replaced_version, written = entry
        if meta.get("resourceVersion") == replaced_version:
            return written
        del self._by_uid[meta["uid"]]
        return cached


async def write_if_changed(
    writer: Writer, cached: Obj, status: Obj, recent: RecentStatusWrites | None = None
) -> bool:
    """PUT `status` to mpijobs/status unless the cached object already has it; True if written.

    A Conflict means our cache is behind; the status we computed still describes the children we
    saw, so it is re-applied to a fresh read of the object instead of failing the whole sync.
    """
    if (cached.get("status") or {}) == status:
        return False
    target = json_copy(cached)
    target["status"] = status
    meta = cached["metadata"]
    try:
        async for attempt in AsyncRetrying(
            retry=retry_if_exception_type(errors.Conflict),
            stop=stop_after_attempt(_ATTEMPTS),
            wait=wait_random_exponential(multiplier=0.05, max=1.0),
            reraise=True,
        ):
            with attempt:
                if attempt.retry_state.attempt_number > 1:
                    fresh = await writer.get(MPIJOBS, meta["name"], meta.get("namespace"))
                    if fresh["metadata"].get("uid") != meta.get("uid"):
                        return False
                    if (fresh.get("status") or {}) == status:
                        return False
                    fresh["status"] = status
                    target = fresh
                written = await writer.update_status(MPIJOBS, target, meta.get("namespace"))
                if recent is not None:
                    recent.remember(target, written)
    except errors.NotFound:
        return False
    except errors.ApiError as exc:
        raise SyncError(f"updating status: {exc.server_message}") from exc
    return True
