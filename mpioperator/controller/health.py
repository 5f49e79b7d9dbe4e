"""The `PodsStuck` condition and `status.unhealthyPods`, updated only when what they say changes.

A stuck pod's details move all the time without news for the user: the kubelet alternates between
ErrImagePull and ImagePullBackOff while it backs off, its back-off message counts seconds, the restart
count grows. The condition (and so its event) changes only when the set of stuck pods or the kind of
problem changes; the listed pods' restart counts follow the pods.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from typing import Any

from mpioperator.api.objects import json_copy
from mpioperator.controller.conditions import TRUE, find, new_condition
from mpioperator.controller.problems import PodProblem, category, describe

Obj = dict[str, Any]

COND_PODS_STUCK = "PodsStuck"
MAX_LISTED = 10
MAX_MESSAGE_BYTES = 1024


@dataclass(frozen=True, slots=True)
class Health:
    listed: list[Obj]
    condition: Obj | None
    changed: bool  # the condition appeared or now says something else: worth one event


WELL = Health([], None, False)


def _truncate(message: str) -> str:
    raw = message.encode()
    if len(raw) <= MAX_MESSAGE_BYTES:
        return message
    return raw[: MAX_MESSAGE_BYTES - 3].decode(errors="ignore") + "..."


def _listed(problems: list[PodProblem], previous: list[Obj]) -> list[Obj]:
    """The first MAX_LISTED stuck pods; a pod listed before with the same problem keeps its reason."""
    before = {p.get("name"): p for p in previous if isinstance(p, dict)}
    listed = []
    for problem in problems[:MAX_LISTED]:
        reason = problem.reason
        old = before.get(problem.pod)
        if old is not None and category(str(old.get("reason") or "")) == category(reason):
            reason = str(old["reason"])
        listed.append(
            {
                "name": problem.pod,
                "replicaType": problem.replica_type,
                "reason": reason,
                "restarts": problem.restarts,
            }
        )
    return listed


def _key(reason: str, listed: list[Obj]) -> tuple[str, tuple[tuple[str, str], ...]]:
    return category(reason), tuple((str(p.get("name")), category(str(p.get("reason") or ""))) for p in listed)


def assess(status: Obj, problems: list[PodProblem], now: dt.datetime) -> Health:
    """From the status as last written and the job's stuck pods now (problems.stuck_pods, in its order):
    the list, the condition, and whether the condition changed."""
    previous_list = [p for p in status.get("unhealthyPods") or () if isinstance(p, dict)]
    listed = _listed(problems, previous_list)
    if not problems:
        return WELL
    previous = find(status, COND_PODS_STUCK)
    reason = problems[0].reason
    if previous is not None and previous.get("status") == TRUE:
        old_reason = str(previous.get("reason") or "")
        if category(old_reason) == category(reason):
            reason = old_reason
        if _key(old_reason, previous_list) == _key(reason, listed):
            return Health(listed, previous, False)
    condition = new_condition(COND_PODS_STUCK, TRUE, reason, _truncate(describe(problems)), now)
    if previous is not None and previous.get("status") == TRUE:
        condition["lastTransitionTime"] = previous.get("lastTransitionTime")
    return Health(listed, condition, True)


def apply(status: Obj, health: Health) -> None:
    """Write the assessment into `status` in place: the condition replaced (or removed) where it stands."""
    conditions = [json_copy(c) for c in status.get("conditions") or ()]
    kept = [c for c in conditions if c.get("type") != COND_PODS_STUCK]
    if health.condition is None:
        if len(kept) != len(conditions):
            status["conditions"] = kept
    elif health.changed:
        status["conditions"] = [*kept, health.condition]
    if health.listed:
        status["unhealthyPods"] = health.listed
    else:
        status.pop("unhealthyPods", None)
