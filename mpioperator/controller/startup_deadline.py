"""The worker start-up deadline (ksonnet's `initTimeout`): workers not all Ready in time fail the job.

Off unless asked for, so upstream's behaviour is the default: the annotation
`mpioperator.io/worker-startup-deadline-seconds` on a job, or the operator flag
`--worker-startup-deadline-seconds` for every job (the annotation wins; "0" turns it off for one job).
The clock starts at `status.startTime`, which a resume sets again, and stops mattering once the job has
been Running: a worker lost later is the launcher's business, as upstream has it.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from typing import Any

from mpioperator.api import constants as api
from mpioperator.api.extensions.parsed import Extensions, parse
from mpioperator.controller.conditions import find, is_finished, parse_time
from mpioperator.controller.pod_state import PodStates
from mpioperator.controller.problems import MAX_NAMED, PodProblem

Obj = dict[str, Any]

REASON = "WorkerStartupDeadlineExceeded"


def deadline_seconds(job: Obj, default: int, ext: Extensions | None = None) -> int:
    """The job's deadline in seconds, 0 for none: its annotation if valid, else the operator's default.
    `ext`: the job's extensions as the sync parsed them (read from the job when None)."""
    own = (ext or parse(job)).launch.worker_startup_deadline
    return max(0, default) if own is None else own


@dataclass(frozen=True, slots=True)
class Verdict:
    expired: bool
    message: str = ""
    recheck_after: float | None = None


def _why(pod: Obj | None, problems: dict[str, PodProblem]) -> str:
    if pod is None:
        return "not created"
    problem = problems.get(pod["metadata"].get("name", ""))
    if problem is not None:
        return problem.reason
    phase = (pod.get("status") or {}).get("phase") or "Pending"
    return "not Ready" if phase == "Running" else phase


def without_pods(job: Obj, status: Obj, *, seconds: int) -> Verdict | None:
    """The verdict when the job's pods cannot change it (no deadline, a finished, suspended, Running or
    unstarted job), None when they must be looked at: a big running job's sync then builds no table of its
    workers by name."""
    if seconds <= 0 or is_finished(status) or (job.get("spec") or {}).get("runPolicy", {}).get("suspend"):
        return Verdict(False)
    running = find(status, api.COND_RUNNING)
    if running is not None and running.get("status") == "True":
        return Verdict(False)
    paused = find(status, api.COND_SUSPENDED)
    if paused is not None and paused.get("status") == "True":
        # Resumed in this very sync: the status step sets startTime anew, so the clock starts then.
        return Verdict(False, recheck_after=float(seconds))
    if parse_time(status.get("startTime")) is None:
        return Verdict(False)
    return None


def judge(
    job: Obj,
    status: Obj,
    workers: dict[str, Obj | None],
    problems: dict[str, PodProblem],
    *,
    seconds: int,
    now: dt.datetime,
    states: PodStates | None = None,
) -> Verdict:
    """Whether the job's workers missed the deadline. `workers` maps every expected worker name (in
    index order) to its pod, None when it does not exist; `problems` are the stuck pods by name;
    `states` the sync's pod descriptions (pod_state.py)."""
    early = without_pods(job, status, seconds=seconds)
    if early is not None:
        return early
    started = parse_time(status.get("startTime"))
    if started is None:  # without_pods has answered for it already
        return Verdict(False)
    states = states or PodStates()
    late = [(name, pod) for name, pod in workers.items() if pod is None or not states.of(pod).ready]
    if not late:
        return Verdict(False)
    left = seconds - (now - started).total_seconds()
    if left > 0:
        return Verdict(False, recheck_after=left)
    named = ", ".join(f"{name} ({_why(pod, problems)})" for name, pod in late[:MAX_NAMED])
    more = f" and {len(late) - MAX_NAMED} more" if len(late) > MAX_NAMED else ""
    message = (
        f"{len(late)} of {len(workers)} workers not Ready within {seconds}s of the job's start: {named}{more}"
    )
    return Verdict(True, message)
