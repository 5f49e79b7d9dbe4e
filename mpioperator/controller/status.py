"""The MPIJob status from what the caches show, as a pure function.

Differences from upstream (decisions.md D5): eviction is a finished failure with a completionTime
(#7), and every event is emitted only when its condition changes, so a finished or converged job
produces no repeated events (#8). Ours (docs/extensions.md): a Failed message goes on to say which workers
ended badly and what the launcher said last (`failure_detail`), and a missed worker start-up deadline
fails the job like an eviction does (`deadline_missed`).
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field

from mpioperator.api import accessors
from mpioperator.api import constants as api
from mpioperator.api.objects import Obj, json_copy
from mpioperator.controller.conditions import (
    FALSE,
    TRUE,
    find,
    format_time,
    is_finished,
    new_condition,
    set_condition,
)
from mpioperator.controller.events import NORMAL, WARNING, truncate_message
from mpioperator.controller.startup_deadline import REASON as REASON_DEADLINE


@dataclass(frozen=True, slots=True)
class StatusEvent:
    type: str
    reason: str
    message: str


@dataclass(slots=True)
class StatusResult:
    status: Obj
    events: list[StatusEvent] = field(default_factory=list)


def _job_condition(job: Obj, cond_type: str) -> Obj | None:
    for cond in (job.get("status") or {}).get("conditions") or ():
        if cond.get("type") == cond_type and cond.get("status") == TRUE:
            return dict(cond)
    return None


def _counts(**values: int) -> Obj:
    return {k: v for k, v in values.items() if v}


def failure(job: Obj, launcher: Obj, launcher_pods: list[Obj]) -> tuple[str, str]:
    """Reason and message of a failed launcher Job, with the newest failed pod's detail."""
    ns, name = job["metadata"].get("namespace", ""), job["metadata"]["name"]
    cond = _job_condition(launcher, "Failed") or {}
    reason = cond.get("reason") or api.REASON_FAILED
    message = cond.get("message") or f"MPIJob {ns}/{name} has failed"
    if reason == api.REASON_BACKOFF_LIMIT_EXCEEDED:
        failed = [p for p in launcher_pods if p.get("status", {}).get("phase") == "Failed"]
        if failed:
            newest = max(failed, key=lambda p: p["metadata"].get("creationTimestamp") or "")
            reason += "/" + (newest["status"].get("reason") or "")
            message = truncate_message(message + ": " + (newest["status"].get("message") or ""))
    return reason, message


def _detailed(message: str, detail: str) -> str:
    return truncate_message(f"{message}; {detail}") if detail else message


def worker_tally(workers: list[Obj]) -> tuple[int, int, int, int]:
    """The workers Failed, of those the Evicted, Succeeded and Running."""
    failed = evicted = succeeded = running = 0
    for pod in workers:
        phase = pod.get("status", {}).get("phase")
        if phase == "Failed":
            failed += 1
            if pod.get("status", {}).get("reason") == "Evicted":
                evicted += 1
        elif phase == "Succeeded":
            succeeded += 1
        elif phase == "Running":
            running += 1
    return failed, evicted, succeeded, running


def compute_status(
    job: Obj,
    *,
    launcher: Obj | None,
    launcher_pods: list[Obj],
    workers: list[Obj],
    now: dt.datetime,
    failure_detail: str = "",
    deadline_missed: str = "",
    tally: tuple[int, int, int, int] | None = None,  # worker_tally(workers), when already known
) -> StatusResult:
    ns, name = job["metadata"].get("namespace", ""), job["metadata"]["name"]
    status = json_copy(job.get("status") or {})
    result = StatusResult(status)
    events = result.events
    suspended = accessors.suspended(job)

    if suspended:
        if set_condition(
            status, new_condition(api.COND_SUSPENDED, TRUE, api.REASON_SUSPENDED, "MPIJob suspended", now)
        ):
            events.append(StatusEvent(NORMAL, api.REASON_SUSPENDED, "MPIJob suspended"))
    elif find(status, api.COND_SUSPENDED) is not None:
        resumed = new_condition(api.COND_SUSPENDED, FALSE, api.REASON_RESUMED, "MPIJob resumed", now)
        if set_condition(status, resumed):
            events.append(StatusEvent(NORMAL, api.REASON_RESUMED, "MPIJob resumed"))
            status["startTime"] = format_time(now)

    replica_statuses = status.setdefault("replicaStatuses", {})
    launcher_running = 0
    if launcher is not None:
        launcher_running = sum(1 for p in launcher_pods if p.get("status", {}).get("phase") == "Running")
        failed_pods = int((launcher.get("status") or {}).get("failed") or 0)
        if _job_condition(launcher, "Complete") is not None:
            replica_statuses[api.LAUNCHER] = _counts(failed=failed_pods, succeeded=1)
            message = f"MPIJob {ns}/{name} successfully completed."
            if not status.get("completionTime") and (launcher.get("status") or {}).get("completionTime"):
                status["completionTime"] = launcher["status"]["completionTime"]
            if set_condition(
                status, new_condition(api.COND_SUCCEEDED, TRUE, api.REASON_SUCCEEDED, message, now)
            ):
                events.append(StatusEvent(NORMAL, api.REASON_SUCCEEDED, message))
        elif _job_condition(launcher, "Failed") is not None:
            replica_statuses[api.LAUNCHER] = _counts(failed=failed_pods)
            reason, message = failure(job, launcher, launcher_pods)
            message = _detailed(message, failure_detail)
            if not status.get("completionTime"):
                status["completionTime"] = format_time(now)
            if set_condition(status, new_condition(api.COND_FAILED, TRUE, reason, message, now)):
                events.append(StatusEvent(WARNING, reason, message))
        else:
            replica_statuses[api.LAUNCHER] = _counts(failed=failed_pods, active=launcher_running)

    failed, evicted, succeeded, running = worker_tally(workers) if tally is None else tally
    replica_statuses[api.WORKER] = _counts(active=running, succeeded=succeeded, failed=failed)

    if evicted:
        message = _detailed(f"{evicted}/{len(workers)} workers are evicted", failure_detail)
        if set_condition(status, new_condition(api.COND_FAILED, TRUE, api.REASON_EVICTED, message, now)):
            events.append(StatusEvent(WARNING, api.REASON_EVICTED, message))
        if not status.get("completionTime"):
            status["completionTime"] = format_time(now)  # deliberately: a finished job, cleaned up per policy

    if deadline_missed and not is_finished(status):
        message = _detailed(deadline_missed, failure_detail)
        if set_condition(status, new_condition(api.COND_FAILED, TRUE, REASON_DEADLINE, message, now)):
            events.append(StatusEvent(WARNING, REASON_DEADLINE, message))
        status["completionTime"] = format_time(now)  # finished like an eviction, cleaned up per policy

    if suspended:
        set_condition(
            status,
            new_condition(
                api.COND_RUNNING, FALSE, api.REASON_SUSPENDED, f"MPIJob {ns}/{name} is suspended.", now
            ),
        )
    elif is_finished(status):
        if find(status, api.COND_RUNNING) is None:
            stamp = status.get("completionTime") or format_time(now)
            cond = new_condition(
                api.COND_RUNNING,
                FALSE,
                api.REASON_RUNNING,
                f"MPIJob {ns}/{name} is finished but Running condition was never set.",
                now,
            )
            cond["lastTransitionTime"] = cond["lastUpdateTime"] = stamp
            status["conditions"] = [*(status.get("conditions") or []), cond]
    elif launcher is not None and launcher_running >= 1 and running == len(workers):
        message = f"MPIJob {ns}/{name} is running."
        if set_condition(status, new_condition(api.COND_RUNNING, TRUE, api.REASON_RUNNING, message, now)):
            events.append(StatusEvent(NORMAL, api.REASON_RUNNING, f"MPIJob {ns}/{name} is running"))
    return result
