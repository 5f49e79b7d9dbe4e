"""`status.phase` and `status.podCounts`: a job's state in one word and its pods in numbers.

The phase is read off the conditions upstream already keeps (and, for `Unknown`, the pods' own phase), so
it never disagrees with them and costs no status write of its own. T9k's phases are all here: its `Paused`
is our `Suspended` (upstream's condition type, the word Kueue and scripts already read), and `Resuming`
lasts from a resume until the job is `Running` again. The counts are per replica type; zeros are left
out, as in replicaStatuses.
"""

from __future__ import annotations

from typing import Any

from mpioperator.api import constants as api
from mpioperator.controller.conditions import find, is_true
from mpioperator.controller.pod_state import PodStates

Obj = dict[str, Any]

PENDING = "Pending"
RUNNING = "Running"
SUSPENDED = "Suspended"
RESUMING = "Resuming"
UNKNOWN = "Unknown"
SUCCEEDED = "Succeeded"
FAILED = "Failed"
PHASES = (PENDING, RUNNING, SUSPENDED, RESUMING, UNKNOWN, SUCCEEDED, FAILED)

_COUNTED_PHASES = {"Pending": "pending", "Running": "running", "Succeeded": "succeeded", "Failed": "failed"}


def _resuming(status: Obj) -> bool:
    """Resumed, and the Running condition still says what the suspension made it say: the job has not
    run since (a whole-job restart removes that condition, and its new attempt is Pending)."""
    suspended, running = find(status, api.COND_SUSPENDED), find(status, api.COND_RUNNING)
    return (
        suspended is not None
        and suspended.get("status") == "False"
        and running is not None
        and running.get("status") == "False"
        and running.get("reason") == api.REASON_SUSPENDED
    )


def phase(status: Obj, suspended: bool, pods_unknown: bool = False) -> str:
    """Failed or Succeeded once finished; Suspended while suspended; Unknown while a pod of the job is in
    phase Unknown; Running while the Running condition is True; Resuming from a resume until then;
    Pending otherwise (not started yet, held, or stuck)."""
    if is_true(status, api.COND_FAILED):
        return FAILED
    if is_true(status, api.COND_SUCCEEDED):
        return SUCCEEDED
    if suspended:
        return SUSPENDED
    if pods_unknown:
        return UNKNOWN
    if is_true(status, api.COND_RUNNING):
        return RUNNING
    if _resuming(status):
        return RESUMING
    return PENDING


def counts(pods: list[Obj], states: PodStates | None = None) -> dict[str, int]:
    """pending, running, ready, succeeded, failed, restarts of `pods`; a pod being deleted is not counted.
    `states`: the sync's pod descriptions (pod_state.py)."""
    states = states or PodStates()
    tally = dict.fromkeys(("pending", "running", "ready", "succeeded", "failed", "restarts"), 0)
    for pod in pods:
        state = states.of(pod)
        if state.deleting:
            continue
        key = _COUNTED_PHASES.get(str(state.phase))
        if key is not None:
            tally[key] += 1
        if key == "running" and state.ready:
            tally["ready"] += 1
        tally["restarts"] += state.restarts
    return {k: v for k, v in tally.items() if v}


def pod_counts(launcher_pods: list[Obj], workers: list[Obj], states: PodStates | None = None) -> Obj:
    """`{Launcher: {...}, Worker: {...}}`, both keys always, so a reader need not guess what is absent."""
    states = states or PodStates()
    return {api.LAUNCHER: counts(launcher_pods, states), api.WORKER: counts(workers, states)}
