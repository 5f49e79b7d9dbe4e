"""What the controller reads of one cached pod's status, described once (docs/architecture.md).

The launcher's start (child_state.py), the worker start-up deadline (startup_deadline.py), the pod counts
(phase.py) and the tasks and aggregate (tasks.py) all ask the same few things of a pod: its phase, whether
it is Ready, whether it is going, how often its containers restarted. A `PodStates` made for one sync
describes each pod the first time one of them asks and hands the same answer to the others.
"""

from __future__ import annotations

from dataclasses import dataclass

from mpioperator.api.objects import Obj


@dataclass(frozen=True, slots=True)
class PodState:
    # status.phase as the API server says it; None when it says none (a pod just made).
    phase: str | None
    ready: bool  # its Ready condition is True
    deleting: bool  # its deletionTimestamp is set
    restarts: int  # of all its containers, init containers included

    @property
    def running(self) -> bool:
        return self.phase == "Running"

    @property
    def phase_or_pending(self) -> str:
        """The phase, Pending when the API server has not said one yet."""
        return str(self.phase or "Pending")


def _ready(status: Obj) -> bool:
    for cond in status.get("conditions") or ():
        if cond.get("type") == "Ready":
            return bool(cond.get("status") == "True")
    return False


def _restarts(status: Obj) -> int:
    containers = (*(status.get("initContainerStatuses") or ()), *(status.get("containerStatuses") or ()))
    return sum(int(c.get("restartCount") or 0) for c in containers)


def describe(pod: Obj) -> PodState:
    status = pod.get("status") or {}
    phase = status.get("phase")
    return PodState(
        phase=None if phase is None else str(phase),
        ready=_ready(status),
        deleting=bool((pod.get("metadata") or {}).get("deletionTimestamp")),
        restarts=_restarts(status),
    )


class PodStates:
    """The pods described during one sync, each once: the cache replaces a pod that changes rather than
    changing it, so within a sync the same object has the same description. Held only for the sync (it
    keeps the pods it described alive, so an object's identity is not reused while it is asked)."""

    __slots__ = ("_described",)

    def __init__(self) -> None:
        self._described: dict[int, tuple[Obj, PodState]] = {}

    def of(self, pod: Obj) -> PodState:
        kept = self._described.get(id(pod))
        if kept is not None and kept[0] is pod:
            return kept[1]
        state = describe(pod)
        self._described[id(pod)] = (pod, state)
        return state
