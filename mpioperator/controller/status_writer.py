"""Writes an MPIJob's status only when it differs, riding out write conflicts without a requeue."""

from __future__ import annotations

import copy

import structlog
from tenacity import AsyncRetrying, retry_if_exception_type, stop_after_attempt, wait_random_exponential

from mpioperator.controller.children import SyncError
from mpioperator.controller.ports import Obj, Writer
from mpioperator.kube import errors
from mpioperator.kube.resources import MPIJOBS

log = structlog.get_logger(__name__)

_ATTEMPTS = 4


async def write_if_changed(writer: Writer, cached: Obj, status: Obj) -> bool:
    """PUT `status` to mpijobs/status unless the cached object already has it; True if written.

    A Conflict means our cache is behind; the status we computed still describes the children we
    saw, so it is re-applied to a fresh read of the object instead of failing the whole sync.
    """
    if (cached.get("status") or {}) == status:
        return False
    target = copy.deepcopy(cached)
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
                await writer.update_status(MPIJOBS, target, meta.get("namespace"))
    except errors.NotFound:
        return False
    except errors.ApiError as exc:
        raise SyncError(f"updating status: {exc}") from exc
    return True
