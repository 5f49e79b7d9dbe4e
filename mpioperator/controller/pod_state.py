"""What the controller reads of one cached pod's status, described once (docs/architecture.md).

The launcher's start (child_state.py), the worker start-up deadline (startup_deadline.py), the pod counts
(phase.py) and the tasks and aggregate (tasks.py) all ask the same few things of a pod: its phase, whether
it is Ready, whether it is going, how often its containers restarted. A `PodStates` made for one sync
describes each pod the first time one of them asks and hands the same answer to the others.

A job's next sync starts from its last sync's descriptions (`PodStateMemory`): the cache replaces a pod
that changes rather than changing it, so a pod that is the very same object is described as before, and a
big job whose one pod changed describes that one pod again, not all of them.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Hashable
from dataclasses import dataclass
from typing import Any, TypeVar

from mpioperator.api.objects import Obj

T = TypeVar("T")


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
    changing it, so the same object has the same description. It keeps the pods it described alive, so an
    object's identity is not reused while it is asked. `before`: the job's last sync's, whose answers
    for the very same objects are taken over (and only those: pods no longer read are let go)."""

    __slots__ = ("_before", "_described", "_facts", "_facts_before")

    def __init__(self, before: PodStates | None = None) -> None:
        self._described: dict[int, tuple[Obj, PodState]] = {}
        self._facts: dict[Hashable, dict[int, tuple[Obj, Any]]] = {}
        self._before = before._described if before is not None else {}
        self._facts_before = before._facts if before is not None else {}

    def of(self, pod: Obj) -> PodState:
        key = id(pod)
        kept = self._described.get(key)
        if kept is not None and kept[0] is pod:
            return kept[1]
        kept = self._before.get(key)
        if kept is None or kept[0] is not pod:
            kept = (pod, describe(pod))
        self._described[key] = kept
        return kept[1]

    def fact(self, pod: Obj, name: Hashable, derive: Callable[[Obj], T]) -> T:
        """`derive(pod)`, asked once per pod object: `derive` must read nothing but the pod, and `name`
        must say which derivation it is."""
        key = id(pod)
        known = self._facts.get(name)
        if known is None:
            known = self._facts[name] = {}
        kept = known.get(key)
        if kept is None or kept[0] is not pod:
            before = self._facts_before.get(name)
            kept = before.get(key) if before is not None else None
            if kept is None or kept[0] is not pod:
                kept = (pod, derive(pod))
            known[key] = kept
        answer: T = kept[1]
        return answer

    def let_go_of_before(self) -> None:
        """What was not taken over from the sync before is not needed any more: one sync back is enough."""
        self._before, self._facts_before = {}, {}

    def asked_nothing(self) -> bool:
        return not self._described and not any(self._facts.values())

    def count(self) -> int:
        """How many pods it describes (no __len__: an empty one must not read as none given)."""
        return len(self._described)


class PodStateMemory:
    """Each job's last sync's pod descriptions (by uid), for its next sync; at most `capacity` pods held,
    the least recently synced jobs forgotten first."""

    def __init__(self, capacity: int = 50_000) -> None:
        self._jobs: OrderedDict[str, PodStates] = OrderedDict()
        self._held = 0
        self._capacity = capacity

    def begin(self, uid: str) -> PodStates:
        """The descriptions for a sync of the job, starting from its last sync's."""
        return PodStates(self._jobs.get(uid)) if uid else PodStates()

    def keep(self, uid: str, states: PodStates) -> None:
        """The sync ended: its descriptions are the job's next sync's start. A sync that asked about no pod
        (the report kept its walks: nothing changed) leaves the last ones as they were."""
        if not uid:
            return
        if states.asked_nothing() and uid in self._jobs:
            self._jobs.move_to_end(uid)
            return
        self.forget(uid)
        self._jobs[uid] = states
        states.let_go_of_before()
        self._held += states.count()
        while self._held > self._capacity and len(self._jobs) > 1:
            _, dropped = self._jobs.popitem(last=False)
            self._held -= dropped.count()

    def forget(self, uid: str) -> None:
        old = self._jobs.pop(uid, None)
        if old is not None:
            self._held -= old.count()

    def holds(self, uid: str) -> bool:
        return uid in self._jobs

    def pods_held(self) -> int:
        return self._held
