"""What is wrong with a job's pods, in words a user can act on, as pure functions of the cached pods.

Three questions, each answered from pod status only (the slim pod cache keeps what they read):
* which pods are stuck, and why (`stuck_pods`): unschedulable, an image that cannot be pulled, a container
  that cannot be created or keeps crashing; the reason is the scheduler's or the kubelet's own word;
* which workers ended badly (`worker_endings`): OOM-killed, or a non-zero exit code;
* what a failed launcher said last (`last_words`): its exit code and termination message.
"""

from __future__ import annotations

import datetime as dt
import re
from dataclasses import dataclass
from typing import Any

from mpioperator.api import constants as api
from mpioperator.controller.pod_state import PodStates

Obj = dict[str, Any]

# Most specific first: the first that applies to a pod is its reason, and the first among a job's pods
# is the job's. Problems the user must fix come before ones that may pass on their own.
STUCK_REASONS = (
    "InvalidImageName",
    "ErrImageNeverPull",
    "CreateContainerConfigError",
    "CreateContainerError",
    "ErrImagePull",
    "ImagePullBackOff",
    "RunContainerError",
    "CrashLoopBackOff",
    "Unschedulable",
)
_PRIORITY = {reason: i for i, reason in enumerate(STUCK_REASONS)}
# The kubelet alternates between these while it backs off pulling one image: one problem, not two.
_SAME_PROBLEM = {"ImagePullBackOff": "ErrImagePull"}
# A container restarted after failing counts as crash-looping while it has run for less than this: a
# crash loop's running spells are short, and each would otherwise clear the problem for a moment.
CRASH_LOOP_WINDOW = 60.0
MAX_NAMED = 3
_DETAIL_BYTES = 400
# A program's output may color itself (ANSI escapes) or hold stray NULs and other control characters: in a
# condition, an event or a status they show as noise or break a terminal, so they are dropped.
_ESCAPE = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]|[\x00-\x08\x0b-\x1f\x7f-\x9f]")


@dataclass(frozen=True, slots=True)
class PodProblem:
    pod: str
    replica_type: str
    reason: str
    message: str
    restarts: int
    index: int


def category(reason: str) -> str:
    """Reasons that are the same problem share a category (an image pull error and its back-off)."""
    return _SAME_PROBLEM.get(reason, reason)


def replica_index(pod: Obj) -> int:
    label = ((pod.get("metadata") or {}).get("labels") or {}).get(api.LABEL_REPLICA_INDEX)
    try:
        return int(label) if label is not None else 0
    except ValueError:
        return 0


def _containers(pod: Obj) -> list[Obj]:
    status = pod.get("status") or {}
    return [*(status.get("initContainerStatuses") or ()), *(status.get("containerStatuses") or ())]


def restarts(pod: Obj) -> int:
    return sum(int(c.get("restartCount") or 0) for c in _containers(pod))


def _time(value: Any) -> dt.datetime | None:
    if not value:
        return None
    return dt.datetime.fromisoformat(str(value).replace("Z", "+00:00"))


def _ended_badly(terminated: Obj | None) -> bool:
    if not terminated:
        return False
    return terminated.get("reason") == "OOMKilled" or int(terminated.get("exitCode") or 0) != 0


def _recent_crash(container: Obj, now: dt.datetime) -> tuple[str, float | None] | None:
    """A container running again after a bad end, for less than the crash-loop window, or one restarted
    before that has ended badly again and waits for the kubelet to restart it: its message and the seconds
    until the window closes (None while it waits: its next state is a change of the pod)."""
    state = container.get("state") or {}
    restarted = int(container.get("restartCount") or 0) > 0
    ended = state.get("terminated")
    if restarted and _ended_badly(ended):
        assert ended is not None
        return f"ended again with {_ending(ended)}", None
    running = state.get("running")
    last = (container.get("lastState") or {}).get("terminated")
    if running is None or not _ended_badly(last) or not restarted:
        return None
    started = _time(running.get("startedAt"))
    if started is None:
        return None
    left = CRASH_LOOP_WINDOW - (now - started).total_seconds()
    if left <= 0:
        return None
    assert last is not None
    return f"restarted after {_ending(last)}", left


def pod_problem(
    pod: Obj, now: dt.datetime, replica_type: str = api.WORKER
) -> tuple[PodProblem | None, float | None]:
    """The pod's most specific problem, if any, and when to look again (a crash-loop window closing)."""
    meta, status = pod.get("metadata") or {}, pod.get("status") or {}
    if meta.get("deletionTimestamp") or status.get("phase") in ("Succeeded", "Failed"):
        return None, None
    found: list[tuple[str, str]] = []
    recheck: float | None = None
    for cond in status.get("conditions") or ():
        unplaced = cond.get("type") == "PodScheduled" and cond.get("status") == "False"
        if unplaced and cond.get("reason") == "Unschedulable":
            found.append(("Unschedulable", str(cond.get("message") or "")))
    for container in _containers(pod):
        waiting = (container.get("state") or {}).get("waiting") or {}
        if waiting.get("reason") in _PRIORITY:
            found.append((str(waiting["reason"]), str(waiting.get("message") or "")))
            continue
        crash = _recent_crash(container, now)
        if crash is not None:
            found.append(("CrashLoopBackOff", crash[0]))
            if crash[1] is not None:
                recheck = crash[1] if recheck is None else min(recheck, crash[1])
    if not found:
        return None, None
    reason, message = min(found, key=lambda f: _PRIORITY[f[0]])
    problem = PodProblem(
        str(meta.get("name") or ""), replica_type, reason, message, restarts(pod), replica_index(pod)
    )
    return problem, recheck


def _order(problem: PodProblem) -> tuple[int, int, str]:
    return (0 if problem.replica_type == api.LAUNCHER else 1, problem.index, problem.pod)


def calm(pod: Obj) -> bool:
    """Whether `pod_problem` finds nothing in the pod whatever the time: it is placed or waits for no
    reason, no container waits for a reason of STUCK_REASONS and none ever restarted (a crash counts for a
    while after a restart only). A pure function of the pod, so its answer can be kept with it."""
    status = pod.get("status") or {}
    for cond in status.get("conditions") or ():
        if cond.get("type") == "PodScheduled" and cond.get("reason") == "Unschedulable":
            return False
    for container in _containers(pod):
        if int(container.get("restartCount") or 0) > 0:
            return False
        if ((container.get("state") or {}).get("waiting") or {}).get("reason") in _PRIORITY:
            return False
    return True


def stuck_pods(
    launcher_pods: list[Obj], workers: list[Obj], now: dt.datetime, states: PodStates | None = None
) -> tuple[list[PodProblem], float | None]:
    """Every stuck pod, launcher first then workers by index; and the soonest re-check, if one is due.
    `states`: the sync's pod descriptions (pod_state.py), which keep whether a pod is `calm`."""
    problems: list[PodProblem] = []
    recheck: float | None = None
    for kind, pods in ((api.LAUNCHER, launcher_pods), (api.WORKER, workers)):
        for pod in pods:
            if states is not None and states.fact(pod, "calm", calm):
                continue
            problem, again = pod_problem(pod, now, kind)
            if problem is not None:
                problems.append(problem)
            if again is not None:
                recheck = again if recheck is None else min(recheck, again)
    return sorted(problems, key=_order), recheck


def readable(text: str) -> str:
    """`text` without terminal escapes and control characters other than newline and tab."""
    return _ESCAPE.sub("", text)


def _bounded(text: str, limit: int = _DETAIL_BYTES, *, keep_end: bool = False) -> str:
    text = readable(text).strip()
    raw = text.encode()
    if len(raw) <= limit:
        return text
    if keep_end:
        return "..." + raw[-(limit - 3) :].decode(errors="ignore")
    return raw[: limit - 3].decode(errors="ignore") + "..."


def name_pods(problems: list[PodProblem]) -> str:
    """`launcher a, workers b, c and 2 more`: who, in few words."""
    parts = []
    for kind in (api.LAUNCHER, api.WORKER):
        names = [p.pod for p in problems if p.replica_type == kind]
        if not names:
            continue
        shown = ", ".join(names[:MAX_NAMED])
        more = f" and {len(names) - MAX_NAMED} more" if len(names) > MAX_NAMED else ""
        word = kind.lower() + ("s" if len(names) > 1 else "")
        parts.append(f"{word} {shown}{more}")
    return ", ".join(parts)


def describe(problems: list[PodProblem]) -> str:
    """One clause per reason, most specific first: `<Reason>: <who>: <the first such pod's message>`."""
    clauses = []
    for reason in STUCK_REASONS:
        group = [p for p in problems if p.reason == reason]
        if group:
            detail = next((p.message for p in group if p.message), "")
            clause = f"{reason}: {name_pods(group)}"
            clauses.append(f"{clause}: {_bounded(detail)}" if detail else clause)
    return "; ".join(clauses)


def _ending(terminated: Obj) -> str:
    code = int(terminated.get("exitCode") or 0)
    if terminated.get("reason") == "OOMKilled":
        return f"OOMKilled (exit code {code})"
    reason = terminated.get("reason")
    return f"exit code {code}" + (f" ({reason})" if reason and reason != "Error" else "")


def _last_bad_end(pod: Obj) -> Obj | None:
    """The pod's most telling bad end: a container ended now, else one that ended before a restart. A pod
    being deleted was stopped by that (the Job controller deletes a launcher restarted in place once its
    back-off limit is reached; mpirun may even crash on the way out), so only its earlier end counts."""
    deleting = bool((pod.get("metadata") or {}).get("deletionTimestamp"))
    for key in ("lastState",) if deleting else ("state", "lastState"):
        for container in _containers(pod):
            terminated = (container.get(key) or {}).get("terminated")
            if _ended_badly(terminated):
                return dict(terminated or {})
    return None


def last_bad_end(pod: Obj) -> Obj | None:
    """The pod's most telling bad end (a container's `terminated` state), None if it has none."""
    return _last_bad_end(pod)


def worker_endings(workers: list[Obj], states: PodStates | None = None) -> str:
    """`worker a was OOMKilled (exit code 137), worker b ended with exit code 3`, at most MAX_NAMED.
    `states`: the sync's pod descriptions (pod_state.py), which keep each pod's bad end."""
    bad_end = _last_bad_end if states is None else (lambda p: states.fact(p, "last bad end", _last_bad_end))
    bad = [(pod, terminated) for pod in workers if (terminated := bad_end(pod)) is not None]
    ended = []
    for pod, terminated in sorted(
        bad, key=lambda ended: (replica_index(ended[0]), (ended[0].get("metadata") or {}).get("name", ""))
    ):
        name = (pod.get("metadata") or {}).get("name", "")
        verb = "was" if terminated.get("reason") == "OOMKilled" else "ended with"
        ended.append(f"worker {name} {verb} {_ending(terminated)}")
    if len(ended) > MAX_NAMED:
        return ", ".join(ended[:MAX_NAMED]) + f" and {len(ended) - MAX_NAMED} more workers ended badly"
    return ", ".join(ended)


def last_words(launcher_pods: list[Obj]) -> str:
    """The newest launcher pod's bad end: `launcher <pod> ended with exit code 2: <message tail>`."""
    ended = [p for p in launcher_pods if _last_bad_end(p) is not None]
    if not ended:
        return ""
    newest = max(ended, key=lambda p: (p.get("metadata") or {}).get("creationTimestamp") or "")
    terminated = _last_bad_end(newest) or {}
    name = (newest.get("metadata") or {}).get("name", "")
    words = f"launcher {name} ended with {_ending(terminated)}"
    message = readable(str(terminated.get("message") or "")).strip()
    return f"{words}: {_bounded(message, keep_end=True)}" if message else words
