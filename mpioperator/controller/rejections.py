"""Children the API server refuses for good: the condition that says so, and how long a job is held
(docs/decisions-local.md L11).

Invalid (422) and Forbidden (403) answers do not change by asking again with the same object; every other
failure (409, 429, 5xx, a timeout, a dropped connection) may, and keeps the usual back-off.
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass
from typing import Any

from mpioperator.api import constants as api
from mpioperator.api.objects import json_copy
from mpioperator.controller.conditions import TRUE, find, new_condition
from mpioperator.controller.errors import SyncError
from mpioperator.kube import errors

Obj = dict[str, Any]

COND_CHILD_REJECTED = "ChildRejected"
REASON_CHILD_INVALID = "ChildInvalid"
REASON_CHILD_FORBIDDEN = "ChildForbidden"
# A held job is asked about again this often, for the refusals a change on the cluster's side can lift
# (a quota raised, a policy corrected); one request each time, silent unless the answer changed.
RECHECK_SECONDS = 300.0
MAX_MESSAGE_BYTES = 1024


def is_permanent(exc: BaseException) -> bool:
    return isinstance(exc, (errors.Invalid, errors.Forbidden))


class ChildRejected(Exception):
    """A child create or update refused for good; the sync holds the job instead of retrying it."""

    def __init__(self, kind: str, name: str, verb: str, cause: errors.ApiError) -> None:
        self.kind = kind
        self.name = name
        self.verb = verb
        self.cause = cause
        super().__init__(self.message)

    @property
    def reason(self) -> str:
        if isinstance(self.cause, errors.AlreadyExists):
            return api.REASON_RESOURCE_EXISTS  # an object of the child's name that is not the job's
        return REASON_CHILD_FORBIDDEN if isinstance(self.cause, errors.Forbidden) else REASON_CHILD_INVALID

    @property
    def message(self) -> str:
        text = f"{self.kind} {self.name} could not be {self.verb}: {self.cause.server_message}"
        raw = text.encode()
        if len(raw) <= MAX_MESSAGE_BYTES:
            return text
        return raw[: MAX_MESSAGE_BYTES - 3].decode(errors="ignore") + "..."


def rejected_condition(status: Obj, rejection: ChildRejected, now: Any) -> tuple[Obj, bool]:
    """The ChildRejected condition for `rejection`, and whether it is news (absent, or saying something
    else). An unchanged refusal keeps the condition exactly as written."""
    current = find(status, COND_CHILD_REJECTED)
    if (
        current is not None
        and current.get("status") == TRUE
        and current.get("reason") == rejection.reason
        and current.get("message") == rejection.message
    ):
        return current, False
    condition = new_condition(COND_CHILD_REJECTED, TRUE, rejection.reason, rejection.message, now)
    if current is not None and current.get("status") == TRUE:
        condition["lastTransitionTime"] = current.get("lastTransitionTime")
    return condition, True


def put_condition(status: Obj, condition: Obj | None, cond_type: str) -> None:
    """Replace the `cond_type` condition in place (moved to the end when new), or remove it for None."""
    conditions = [json_copy(c) for c in status.get("conditions") or ()]
    current = next((c for c in conditions if c.get("type") == cond_type), None)
    if condition is None:
        if current is not None:
            status["conditions"] = [c for c in conditions if c.get("type") != cond_type]
        return
    if current == condition:
        return
    status["conditions"] = [*(c for c in conditions if c.get("type") != cond_type), condition]


@dataclass(frozen=True, slots=True)
class Hold:
    generation: int
    until: float  # monotonic


class Holds:
    """Jobs held after a refusal, by UID: not written to again until their spec changes (a new
    generation) or the re-check is due. In memory only: a new leader tries once, learns the same answer
    from the API server, and finds the condition already written, so it records nothing again."""

    def __init__(self, capacity: int = 20_000) -> None:
        self._held: OrderedDict[str, Hold] = OrderedDict()
        self._capacity = capacity

    def hold(self, uid: str, generation: int, now: float) -> float:
        self._held[uid] = Hold(generation, now + RECHECK_SECONDS)
        self._held.move_to_end(uid)
        while len(self._held) > self._capacity:
            self._held.popitem(last=False)
        return RECHECK_SECONDS

    def remaining(self, uid: str, generation: int, now: float) -> float | None:
        """Seconds the job stays held, or None when it is not (never held, spec changed, re-check due)."""
        hold = self._held.get(uid)
        if hold is None:
            return None
        if hold.generation != generation or now >= hold.until:
            del self._held[uid]
            return None
        return hold.until - now

    def release(self, uid: str) -> None:
        self._held.pop(uid, None)


def refused(exc: errors.ApiError, kind: str, name: str, verb: str, what: str) -> Exception:
    """What a failed child write raises: a permanent refusal holds the job (L11), anything else retries."""
    if is_permanent(exc):
        return ChildRejected(kind, name, verb, exc)
    return SyncError(f"{what}: {exc.server_message}")


def not_managed_message(name: str, kind: str) -> str:
    return f'Resource "{name}" of Kind "{kind}" already exists and is not managed by MPIJob'
