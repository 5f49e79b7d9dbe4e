"""The job's `Invalid` condition: what the validators found wrong with its spec, said once.

Bad input the CRD cannot express is reported here as one Warning event and a condition, never a retry.
"""

from __future__ import annotations

import datetime as dt

from mpioperator.api import constants as api
from mpioperator.api.objects import Obj
from mpioperator.api.validation import FieldError, aggregate_message
from mpioperator.controller import conditions
from mpioperator.controller.events import WARNING
from mpioperator.controller.phase import PENDING
from mpioperator.controller.status import StatusEvent

INVALID_CONDITION = "Invalid"


def clear(job: Obj) -> None:
    """The user fixed the spec: drop our condition so the job reads like any other."""
    if conditions.find(job.get("status") or {}, INVALID_CONDITION) is not None:
        job["status"]["conditions"] = [
            c for c in job["status"]["conditions"] if c.get("type") != INVALID_CONDITION
        ]


def mark(job: Obj, problems: list[FieldError], now: dt.datetime) -> StatusEvent | None:
    """Put the condition saying `problems` into the job's status; the Warning to record, None when the
    condition already says exactly that (nothing to write)."""
    message = f"Found validation errors: {aggregate_message(problems)}"
    status = job.setdefault("status", {})
    current = conditions.find(status, INVALID_CONDITION) or {}
    if current.get("status") == "True" and current.get("message") == message:
        return None
    # Not set_condition: it keeps the old message when status and reason are unchanged, and the
    # condition must say what is wrong now.
    condition = conditions.new_condition(INVALID_CONDITION, "True", api.REASON_VALIDATION_ERROR, message, now)
    if current.get("status") == "True":
        condition["lastTransitionTime"] = current.get("lastTransitionTime")
    others = [c for c in status.get("conditions") or () if c.get("type") != INVALID_CONDITION]
    status["conditions"] = [*others, condition]
    status["phase"] = PENDING
    return StatusEvent(WARNING, api.REASON_VALIDATION_ERROR, message)
