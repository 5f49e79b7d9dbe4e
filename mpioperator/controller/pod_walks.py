"""The status report's walks over a job's pods, kept while the pods are the very same objects.

The report counts the pods, lists them as tasks, names the workers that ended badly and looks for stuck
ones: four walks over every worker at each sync. The children step hands over the same worker list for as
long as the job's pods are unchanged (worker_view.py), and the cache replaces a pod that changes rather
than changing it, so the same list and the same launcher pods give the same answers. A walk whose answer
depends on the time says until when it holds; it is made again after that.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Hashable
from dataclasses import dataclass, field
from typing import Any, TypeVar

from mpioperator.api.objects import Obj

T = TypeVar("T")


@dataclass(slots=True)
class _Walked:
    workers: list[Obj]  # held, so that their identity cannot be reused while they are compared
    launcher_pods: list[Obj]
    results: dict[Hashable, tuple[Any, float | None]] = field(default_factory=dict)

    def same(self, launcher_pods: list[Obj], workers: list[Obj]) -> bool:
        return (
            self.workers is workers
            and len(self.launcher_pods) == len(launcher_pods)
            and all(a is b for a, b in zip(self.launcher_pods, launcher_pods, strict=True))
        )


class PodWalks:
    """Per job (by uid), the answers of walks over its last pod lists; the newest `capacity` jobs."""

    def __init__(self, capacity: int = 20_000) -> None:
        self._jobs: OrderedDict[str, _Walked] = OrderedDict()
        self._capacity = capacity

    def walk(
        self,
        uid: str,
        launcher_pods: list[Obj],
        workers: list[Obj],
        key: Hashable,
        make: Callable[[], tuple[T, float | None]],
        now: float,
    ) -> T:
        """`make()`'s answer, kept for the same pods and `key` until the time it says it changes (None:
        never), as long as `now` is before it."""
        if not uid:
            return make()[0]
        walked = self._jobs.get(uid)
        if walked is None or not walked.same(launcher_pods, workers):
            walked = _Walked(workers, list(launcher_pods))
            self._jobs[uid] = walked
        self._jobs.move_to_end(uid)
        while len(self._jobs) > self._capacity:
            self._jobs.popitem(last=False)
        kept = walked.results.get(key)
        if kept is not None and (kept[1] is None or now < kept[1]):
            answer: T = kept[0]
            return answer
        answer, until = make()
        walked.results[key] = (answer, until)
        return answer

    def forget(self, uid: str) -> None:
        self._jobs.pop(uid, None)

    def holds(self, uid: str) -> bool:
        return uid in self._jobs
