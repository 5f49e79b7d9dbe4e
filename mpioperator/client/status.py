"""Reading an MPIJob's status: its phase, its replica counts, a one-line progress summary. Pure functions
of the object, shared by the SDK's `wait` and the CLI's `list`, `describe` and `wait`."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from mpioperator.api import accessors
from mpioperator.api import constants as api

Obj = dict[str, Any]
PENDING = "Pending"
FINISHED = (api.COND_SUCCEEDED, api.COND_FAILED)
# The first condition that holds, in this order, names the phase: an ending beats a suspension, which
# beats a restart, which beats plain running.
_PHASE_ORDER = (
    api.COND_FAILED,
    api.COND_SUCCEEDED,
    api.COND_SUSPENDED,
    api.COND_RESTARTING,
    api.COND_RUNNING,
    api.COND_CREATED,
)


def conditions(job: Obj) -> list[Obj]:
    status = job.get("status") or {}
    return [c for c in status.get("conditions") or () if isinstance(c, dict)]


def condition(job: Obj, cond_type: str) -> Obj | None:
    """The condition of that type if it is True."""
    for cond in conditions(job):
        if cond.get("type") == cond_type and cond.get("status") == "True":
            return cond
    return None


def phase(job: Obj) -> str:
    """status.phase when the status has one (some controllers write it), else from the conditions:
    Failed, Succeeded, Suspended, Restarting, Running, Created, or Pending when none holds."""
    written = (job.get("status") or {}).get("phase")
    if written:
        return str(written)
    for cond_type in _PHASE_ORDER:
        if condition(job, cond_type):
            return cond_type
    return PENDING


def finished(job: Obj) -> bool:
    return phase(job) in FINISHED


@dataclass(frozen=True)
class ReplicaCounts:
    replica_type: str
    desired: int
    active: int
    succeeded: int
    failed: int


def replica_counts(job: Obj) -> list[ReplicaCounts]:
    """Desired (spec) and observed (status.replicaStatuses) pods per replica type, launcher first."""
    statuses = (job.get("status") or {}).get("replicaStatuses") or {}
    out = []
    for replica_type in (api.LAUNCHER, api.WORKER):
        if accessors.replica_spec(job, replica_type) is None:
            continue
        seen = statuses.get(replica_type) or {}
        out.append(
            ReplicaCounts(
                replica_type,
                accessors.replica_count(job, replica_type),
                int(seen.get("active") or 0),
                int(seen.get("succeeded") or 0),
                int(seen.get("failed") or 0),
            )
        )
    return out


def workers_column(job: Obj) -> str:
    """Active workers of desired, `2/2`, as `kubectl get` shows ready pods."""
    for counts in replica_counts(job):
        if counts.replica_type == api.WORKER:
            return f"{counts.active}/{counts.desired}"
    return "0/0"


def progress(job: Obj) -> str:
    """One line: phase, then launcher and worker counts, then the latest condition's message."""
    parts = [phase(job)]
    for counts in replica_counts(job):
        seen = f"{counts.active}/{counts.desired} active"
        if counts.succeeded:
            seen += f", {counts.succeeded} succeeded"
        if counts.failed:
            seen += f", {counts.failed} failed"
        parts.append(f"{counts.replica_type.lower()} {seen}")
    if (reported := training_progress(job)) is not None:
        parts.append(f"progress {reported}")
    latest = latest_condition(job)
    if latest and latest.get("message"):
        parts.append(str(latest["message"]))
    return "; ".join(parts)


def training_progress(job: Obj) -> str | None:
    """`status.progress` in words (mpioperator.io/progress): its text, then its metrics; None without."""
    found = (job.get("status") or {}).get("progress")
    if not isinstance(found, dict) or not found.get("text"):
        return None
    metrics = found.get("metrics")
    shown = ", ".join(f"{k}={v}" for k, v in metrics.items()) if isinstance(metrics, dict) else ""
    return f"{found['text']} ({shown})" if shown else str(found["text"])


def latest_condition(job: Obj) -> Obj | None:
    """The True condition that changed last (the order written breaks ties)."""
    true = [c for c in conditions(job) if c.get("status") == "True"]
    if not true:
        return None
    return max(enumerate(true), key=lambda ic: (str(ic[1].get("lastTransitionTime") or ""), ic[0]))[1]
