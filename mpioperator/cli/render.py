"""Text the CLI prints: tables, ages, `describe`, and what is wrong with a pod. Pure functions of API
objects and the current time, so each is tested without a cluster."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

from mpioperator.api import accessors
from mpioperator.client import status

Obj = dict[str, Any]
NONE = "<none>"
# Waiting reasons that are a normal step on the way to running, not a problem.
_ON_THE_WAY = frozenset({"ContainerCreating", "PodInitializing"})


def table(rows: Sequence[Sequence[str]], indent: str = "") -> str:
    """Columns padded to their widest cell, three spaces apart, as kubectl prints them."""
    if not rows:
        return ""
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    lines = []
    for row in rows:
        cells = [cell.ljust(width) for cell, width in zip(row, widths, strict=True)]
        lines.append(indent + "   ".join(cells).rstrip())
    return "\n".join(lines)


def parse_time(value: Any) -> datetime | None:
    if not value:
        return None
    try:
        return datetime.fromisoformat(str(value).replace("Z", "+00:00"))
    except ValueError:
        return None


def age(timestamp: Any, now: datetime) -> str:
    """kubectl's short ages: 42s, 5m, 3h, 2d (and m+s, h+m below a few units)."""
    then = parse_time(timestamp)
    if then is None:
        return NONE
    seconds = max(0, int((now - then).total_seconds()))
    if seconds < 120:
        return f"{seconds}s"
    minutes = seconds // 60
    if minutes < 10:
        rest = seconds % 60
        return f"{minutes}m{rest}s" if rest else f"{minutes}m"
    if minutes < 180:
        return f"{minutes}m"
    hours = minutes // 60
    if hours < 48:
        return f"{hours}h"
    return f"{hours // 24}d"


def now_utc() -> datetime:
    return datetime.now(UTC)


def jobs_table(jobs: Sequence[Obj], now: datetime, *, with_namespace: bool) -> str:
    header = ["NAME", "PHASE", "WORKERS", "AGE"]
    if with_namespace:
        header.insert(0, "NAMESPACE")
    rows = [header]
    for job in jobs:
        row = [
            accessors.name(job),
            status.phase(job),
            status.workers_column(job),
            age(job["metadata"].get("creationTimestamp"), now),
        ]
        if with_namespace:
            row.insert(0, accessors.namespace(job))
        rows.append(row)
    return table(rows)


def pod_problem(pod: Obj) -> str | None:
    """Why this pod holds the job back, in the words of the kubelet or the scheduler; None if it does not."""
    pod_status = pod.get("status") or {}
    containers = pod_status.get("containerStatuses") or ()
    if pod_status.get("phase") == "Failed":
        exits = [e for e in map(_nonzero_exit, containers) if e]
        return exits[0] if exits else str(pod_status.get("reason") or pod_status.get("message") or "Failed")
    for container in containers:
        waiting = (container.get("state") or {}).get("waiting") or {}
        reason = waiting.get("reason")
        if reason and reason not in _ON_THE_WAY:
            message = waiting.get("message")
            return f"{reason}: {message}" if message else str(reason)
        exited = _nonzero_exit(container)
        if exited:
            return exited
        if container.get("restartCount"):
            return f"{container.get('name')} restarted {container['restartCount']} times"
    for cond in pod_status.get("conditions") or ():
        if cond.get("type") == "PodScheduled" and cond.get("status") == "False":
            return f"{cond.get('reason') or 'Unschedulable'}: {cond.get('message') or ''}".rstrip(": ")
    return None


def _nonzero_exit(container: Obj) -> str | None:
    terminated = (container.get("state") or {}).get("terminated") or {}
    code = terminated.get("exitCode")
    if not code:
        return None
    return f"{container.get('name')} exited with {code} ({terminated.get('reason') or 'Error'})"


def describe(
    job: Obj, pods: Sequence[Obj], events: Sequence[Obj], now: datetime, *, last_events: int = 10
) -> str:
    meta = job.get("metadata") or {}
    job_status = job.get("status") or {}
    started = job_status.get("startTime")
    completed = job_status.get("completionTime")
    fields = [
        ("Name", accessors.name(job)),
        ("Namespace", accessors.namespace(job)),
        ("Phase", status.phase(job)),
        ("Created", _when(meta.get("creationTimestamp"), now)),
        ("Started", _when(started, now)),
        ("Completed", _when(completed, now)),
        ("MPI implementation", accessors.mpi_implementation(job)),
        ("Slots per worker", str(accessors.slots_per_worker(job))),
        ("Launcher creation", accessors.launcher_creation_policy(job)),
        ("Clean pod policy", accessors.clean_pod_policy(job)),
        ("Suspended", "yes" if accessors.suspended(job) else "no"),
    ]
    if (reported := status.training_progress(job)) is not None:
        updated = (job_status.get("progress") or {}).get("lastUpdateTime")
        fields.append(("Progress", f"{reported}, read {age(updated, now)} ago" if updated else reported))
    width = max(len(label) for label, _ in fields) + 2
    out = [f"{label + ':':<{width}}{value}" for label, value in fields]

    out += ["", "Replicas:"]
    counts = [["TYPE", "DESIRED", "ACTIVE", "SUCCEEDED", "FAILED"]]
    for c in status.replica_counts(job):
        counts.append([c.replica_type, str(c.desired), str(c.active), str(c.succeeded), str(c.failed)])
    out.append(table(counts, "  "))

    out += ["", "Conditions:"]
    conds = status.conditions(job)
    if conds:
        rows = [["TYPE", "STATUS", "REASON", "AGE", "MESSAGE"]]
        for cond in conds:
            rows.append(
                [
                    str(cond.get("type") or ""),
                    str(cond.get("status") or ""),
                    str(cond.get("reason") or ""),
                    age(cond.get("lastTransitionTime"), now),
                    str(cond.get("message") or ""),
                ]
            )
        out.append(table(rows, "  "))
    else:
        out.append(f"  {NONE}")

    out += ["", "Problem pods:"]
    problems = [(p, pod_problem(p)) for p in sorted(pods, key=lambda p: p["metadata"]["name"])]
    shown = [["NAME", "PHASE", "PROBLEM"]]
    shown += [
        [p["metadata"]["name"], str((p.get("status") or {}).get("phase") or ""), why]
        for p, why in problems
        if why
    ]
    out.append(table(shown, "  ") if len(shown) > 1 else f"  {NONE} ({len(pods)} pods)")

    recent = list(events)[-last_events:]
    out += ["", f"Events (last {last_events}):" if len(events) > last_events else "Events:"]
    if recent:
        rows = [["AGE", "TYPE", "REASON", "OBJECT", "MESSAGE"]]
        for event in recent:
            involved = event.get("involvedObject") or {}
            rows.append(
                [
                    age(
                        event.get("lastTimestamp") or event.get("eventTime") or event.get("firstTimestamp"),
                        now,
                    ),
                    str(event.get("type") or ""),
                    str(event.get("reason") or ""),
                    f"{str(involved.get('kind') or '').lower()}/{involved.get('name') or ''}",
                    str(event.get("message") or "").replace("\n", " "),
                ]
            )
        out.append(table(rows, "  "))
    else:
        out.append(f"  {NONE}")
    return "\n".join(out)


def _when(timestamp: Any, now: datetime) -> str:
    return f"{timestamp} ({age(timestamp, now)} ago)" if timestamp else NONE
