"""Job conditions with upstream's exact update rules (upstream's mpi_job_controller_status.go)."""

from __future__ import annotations

import datetime as dt
from typing import Any

from mpioperator.api import constants as api
from mpioperator.api.objects import Obj, json_copy

TRUE = "True"
FALSE = "False"


def format_time(when: dt.datetime) -> str:
    return when.astimezone(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def parse_time(value: Any) -> dt.datetime | None:
    if not value:
        return None
    return dt.datetime.fromisoformat(str(value).replace("Z", "+00:00"))


def new_condition(cond_type: str, status: str, reason: str, message: str, now: dt.datetime) -> Obj:
    stamp = format_time(now)
    return {
        "type": cond_type,
        "status": status,
        "reason": reason,
        "message": message,
        "lastUpdateTime": stamp,
        "lastTransitionTime": stamp,
    }


def find(status: Obj, cond_type: str) -> Obj | None:
    for cond in status.get("conditions") or ():
        if cond.get("type") == cond_type:
            return dict(cond)
    return None


def is_true(status: Obj, cond_type: str) -> bool:
    cond = find(status, cond_type)
    return cond is not None and cond.get("status") == TRUE


def is_finished(status: Obj) -> bool:
    return is_true(status, api.COND_SUCCEEDED) or is_true(status, api.COND_FAILED)


def _filter_out(conditions: list[Obj], new_type: str) -> list[Obj]:
    kept = []
    for cond in conditions:
        kind = cond.get("type")
        if kind == new_type:
            continue
        if new_type == api.COND_RESTARTING and kind == api.COND_RUNNING:
            continue
        if new_type == api.COND_RUNNING and kind == api.COND_RESTARTING:
            continue
        cond = json_copy(cond)
        if new_type in (api.COND_FAILED, api.COND_SUCCEEDED) and kind in (api.COND_RUNNING, api.COND_FAILED):
            cond["status"] = FALSE
        kept.append(cond)
    return kept


def set_condition(status: Obj, new: Obj) -> bool:
    """Apply `new` to status.conditions in place; False when nothing changed.

    Same status and reason: untouched (message and times kept). Same status, other reason: the old
    transition time is kept. The updated condition always moves to the end of the list.
    """
    current = find(status, new["type"])
    if (
        current is not None
        and current.get("status") == new["status"]
        and current.get("reason") == new["reason"]
    ):
        return False
    new = dict(new)
    if current is not None and current.get("status") == new["status"]:
        new["lastTransitionTime"] = current.get("lastTransitionTime")
    status["conditions"] = [*_filter_out(list(status.get("conditions") or []), new["type"]), new]
    return True


def put(status: Obj, cond_type: str, state: str, reason: str, message: str, now: dt.datetime) -> bool:
    """Set one of our own conditions to say exactly this, message included (unlike upstream's rule in
    set_condition); False when it already did."""
    current = find(status, cond_type) or {}
    if (current.get("status"), current.get("reason"), current.get("message")) == (state, reason, message):
        return False
    new = new_condition(cond_type, state, reason, message, now)
    if current.get("status") == state:
        new["lastTransitionTime"] = current.get("lastTransitionTime")
    others = [c for c in status.get("conditions") or () if c.get("type") != cond_type]
    status["conditions"] = [*others, new]
    return True


def drop(status: Obj, cond_type: str) -> None:
    """Remove one of our own conditions once what it reports is over."""
    if find(status, cond_type) is not None:
        status["conditions"] = [c for c in status.get("conditions") or () if c.get("type") != cond_type]
