"""What the status says beyond upstream's (docs/extensions.md), added after upstream's status step.

* `ChildRejected`: a child the API server refused for good, while the job is held (decisions-local L11);
* `PodsStuck` and `unhealthyPods`: pods that cannot start or keep crashing, with the scheduler's or the
  kubelet's reason (health.py);
* the Failed message goes on to name the workers that ended badly and the launcher's last words;
* the worker start-up deadline (startup_deadline.py), and a launcher that waited for its hosts past it
  (host_wait.py);
* `phase` and `podCounts` (phase.py), `aggregate` and `tasks` (tasks.py).

Each is computed from the caches like the rest of the status and written in the same status write, so it
adds a write only when what it says changes; each event comes with a change of its condition. A change of
the pods' counts and lists alone waits a little for the next change that is written anyway
(`CountsSettle`).
"""

from __future__ import annotations

import copy
import datetime as dt
from collections import OrderedDict
from collections.abc import Callable, Hashable
from dataclasses import dataclass
from typing import Any

from mpioperator.api import accessors, names
from mpioperator.api import constants as api
from mpioperator.api.extensions.parsed import Extensions
from mpioperator.api.objects import Obj
from mpioperator.controller import health, host_wait, phase, startup_deadline, tasks
from mpioperator.controller.conditions import is_finished
from mpioperator.controller.events import WARNING
from mpioperator.controller.pod_state import PodStates
from mpioperator.controller.pod_walks import PodWalks
from mpioperator.controller.problems import PodProblem, last_words, stuck_pods, worker_endings
from mpioperator.controller.rejections import (
    COND_CHILD_REJECTED,
    ChildRejected,
    put_condition,
    rejected_condition,
)
from mpioperator.controller.status import StatusEvent, worker_tally

# A change of the pods' counts and lists and nothing else (a launcher pod Pending before it runs, one that
# ended before its Job says so) waits this long for a change that is written anyway, as child events
# settle (L6).
COUNTS_SETTLE = 3.0
# The status fields that only follow the pods: a change of these alone waits for COUNTS_SETTLE.
POD_FIELDS = ("podCounts", "aggregate", "tasks")


@dataclass(frozen=True, slots=True)
class Observed:
    job: Obj
    pods: tuple[list[Obj], list[Obj]]  # launcher pods, workers
    problems: list[PodProblem]
    deadline: startup_deadline.Verdict
    failure_detail: str
    recheck_after: float | None
    states: PodStates  # the sync's pod descriptions (pod_state.py), for finish


def rejection(
    status: Obj, refused: ChildRejected | None, *, cleared: bool, now: dt.datetime
) -> list[StatusEvent]:
    """Set the ChildRejected condition for a refusal (one event when it is news), or remove it once the
    children step went through (`cleared`); a held job's condition stays as it is."""
    if refused is not None:
        condition, news = rejected_condition(status, refused, now)
        put_condition(status, condition, COND_CHILD_REJECTED)
        return [StatusEvent(WARNING, refused.reason, refused.message)] if news else []
    if cleared:
        put_condition(status, None, COND_CHILD_REJECTED)
    return []


class Reporter:
    """Turns the job's pods into the extra status; remembers each job's launcher's last words, since the
    Job controller deletes a launcher pod restarted in place before it marks the Job Failed."""

    def __init__(self, default_deadline_seconds: int = 0, capacity: int = 20_000) -> None:
        self._default_deadline = default_deadline_seconds
        self._last_words: OrderedDict[str, str] = OrderedDict()
        self._capacity = capacity
        self._walks = PodWalks(capacity)

    def _remember(self, uid: str, words: str) -> str:
        if words:
            self._last_words[uid] = words
            self._last_words.move_to_end(uid)
            while len(self._last_words) > self._capacity:
                self._last_words.popitem(last=False)
            return words
        return self._last_words.get(uid, "")

    def forget(self, uid: str) -> None:
        """A new attempt of the job begins (the last one's launcher said its last words), or the job
        finished or went: nothing kept of it is read again."""
        self._last_words.pop(uid, None)
        self._walks.forget(uid)

    def holds_pods_of(self, uid: str) -> bool:
        return self._walks.holds(uid)

    def observe(
        self,
        job: Obj,
        ext: Extensions,
        launcher_pods: list[Obj],
        workers: list[Obj],
        now: dt.datetime,
        states: PodStates | None = None,
    ) -> Observed:
        """Everything the status step needs from the pods, before it runs; `states` describes each pod
        once for the whole sync (pod_state.py)."""
        states = states or PodStates()
        uid, clock = job["metadata"].get("uid", ""), now.timestamp()

        def stuck() -> tuple[tuple[list[PodProblem], float | None], float | None]:
            # Kept until the soonest a recent crash stops counting (when the answer can change).
            found, recheck = stuck_pods(launcher_pods, workers, now, states)
            until = None if recheck is None else clock + recheck
            return (found, until), until

        problems, crash_until = self._walks.walk(uid, launcher_pods, workers, "stuck", stuck, clock)
        problems = list(problems)
        crash_recheck = None if crash_until is None else crash_until - clock
        seconds = startup_deadline.deadline_seconds(job, self._default_deadline, ext)
        verdict = startup_deadline.without_pods(job, job.get("status") or {}, seconds=seconds)
        if verdict is None:
            # A name per index, only when the deadline judges them: a job without one, suspended or
            # Running costs its syncs nothing per worker.
            by_name = {p["metadata"].get("name", ""): p for p in workers}
            count = accessors.worker_replicas(job) if accessors.replica_spec(job, api.WORKER) else 0
            expected = {
                names.worker_name(job, i): by_name.get(names.worker_name(job, i)) for i in range(count)
            }
            verdict = startup_deadline.judge(
                job,
                job.get("status") or {},
                expected,
                {p.pod: p for p in problems},
                seconds=seconds,
                now=now,
                states=states,
            )
        unreachable = ""
        if not verdict.expired and not accessors.suspended(job):
            unreachable = host_wait.gave_up(launcher_pods)
            if unreachable:
                verdict = startup_deadline.Verdict(True, unreachable)
        words = self._remember(job["metadata"].get("uid", ""), last_words(launcher_pods))
        # A waiter that gave up: its last words are the verdict's message already.
        endings = self._walks.walk(
            uid, launcher_pods, workers, "endings", lambda: (worker_endings(workers, states), None), clock
        )
        detail = "; ".join(part for part in (endings, words) if part and not unreachable)
        waits = [w for w in (crash_recheck, verdict.recheck_after) if w is not None]
        return Observed(
            job, (launcher_pods, workers), problems, verdict, detail, min(waits) if waits else None, states
        )

    def tally(
        self, job: Obj, launcher_pods: list[Obj], workers: list[Obj], now: dt.datetime
    ) -> tuple[int, int, int, int]:
        """The status step's worker_tally, kept for the same pods."""
        uid = job["metadata"].get("uid", "")
        return self._walks.walk(
            uid, launcher_pods, workers, "tally", lambda: (worker_tally(workers), None), now.timestamp()
        )

    def finish(
        self, status: Obj, observed: Observed, *, suspended: bool, now: dt.datetime
    ) -> list[StatusEvent]:
        """Write PodsStuck, unhealthyPods, podCounts, aggregate, tasks and phase into the computed status;
        the events due."""
        events: list[StatusEvent] = []
        if is_finished(status):
            health.apply(status, health.WELL)  # a finished job's pods are not stuck, they are done
        else:
            assessed = health.assess(status, observed.problems, now)
            health.apply(status, assessed)
            if assessed.changed and assessed.condition is not None:
                stuck = assessed.condition
                events.append(StatusEvent(WARNING, str(stuck["reason"]), str(stuck["message"])))
        launcher_pods, workers = observed.pods
        job, clock = observed.job, now.timestamp()
        uid = job["metadata"].get("uid", "")

        def walked(key: Hashable, make: Callable[[], Any]) -> Any:
            # A copy: the status is the caller's to change, the kept answer is not.
            kept = self._walks.walk(uid, launcher_pods, workers, key, lambda: (make(), None), clock)
            return copy.deepcopy(kept)

        states = observed.states
        status["podCounts"] = walked("counts", lambda: phase.pod_counts(launcher_pods, workers, states))
        finished = is_finished(status)
        wants_pods = not (suspended or finished)
        status["aggregate"] = walked(
            (
                "aggregate",
                wants_pods,
                accessors.worker_replicas(job),
                bool(accessors.replica_spec(job, api.WORKER)),
                bool(accessors.replica_spec(job, api.LAUNCHER)),
            ),
            lambda: tasks.aggregate(job, launcher_pods, workers, wants_pods=wants_pods, states=states),
        )
        status["tasks"] = walked("tasks", lambda: tasks.tasks(launcher_pods, workers, states))
        unknown = not finished and walked("unknown", lambda: tasks.unknown(launcher_pods, workers, states))
        status["phase"] = phase.phase(status, suspended, pods_unknown=unknown)
        return events


class CountsSettle:
    """When a status differs from the last written one in POD_FIELDS only, the write waits up to
    COUNTS_SETTLE seconds from the first such sync; any other change writes at once, counts included."""

    def __init__(self, capacity: int = 20_000) -> None:
        self._since: OrderedDict[str, float] = OrderedDict()
        self._capacity = capacity

    def wait(self, uid: str, written: Obj, status: Obj, now: float) -> float | None:
        """Seconds to hold the write back, or None to write now (or to write nothing)."""
        counts_only = (
            written.get("podCounts") is not None
            and any(written.get(k) != status.get(k) for k in POD_FIELDS)
            and {k: v for k, v in written.items() if k not in POD_FIELDS}
            == {k: v for k, v in status.items() if k not in POD_FIELDS}
        )
        if not counts_only:
            self._since.pop(uid, None)
            return None
        since = self._since.setdefault(uid, now)
        while len(self._since) > self._capacity:
            self._since.popitem(last=False)
        left = COUNTS_SETTLE - (now - since)
        if left <= 0:
            self._since.pop(uid, None)
            return None
        return left
