"""What a chaos run ended with, judged against its plan: outcomes, worker creates, orphans; and its summary.

Pure functions over objects read from the API server and records read from the audit log, so the checks
themselves are unit-tested with hand-made inputs.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from mpioperator.testing.chaos_plan import (
    DELETED,
    FAILED,
    SUCCEEDED,
    SUSPEND_RESUME,
    ChaosPlan,
    JobPlan,
)

Obj = dict[str, Any]
RESUMED_REASON = "MPIJobResumed"


def _conditions(job: Obj) -> list[Obj]:
    return list((job.get("status") or {}).get("conditions") or ())


def outcome(job: Obj | None) -> str:
    """Succeeded, Failed or Deleted; otherwise the newest condition type that holds, or "Pending"."""
    if job is None:
        return DELETED
    holding = [c["type"] for c in _conditions(job) if c.get("status") == "True"]
    for final in (SUCCEEDED, FAILED):
        if final in holding:
            return final
    return holding[-1] if holding else "Pending"


def worker_names(plan: JobPlan, workers: int) -> list[str]:
    return [f"{plan.name}-worker-{i}" for i in range(workers)]


def job_mismatches(plan: ChaosPlan, jobs: Mapping[str, Obj], pods: Iterable[Obj]) -> list[str]:
    """Every job whose end differs from its expectation: outcome, workers left, the resume it went through."""
    present = {p["metadata"]["name"] for p in pods}
    problems = []
    for job in plan.jobs:
        want = job.expectation(plan.workers)
        found = jobs.get(job.name)
        got = outcome(found)
        if got != want.outcome:
            problems.append(f"{job.name}: {got}, expected {want.outcome}")
            continue
        left = sum(1 for name in worker_names(job, plan.workers) if name in present)
        if left != want.workers_left:
            problems.append(f"{job.name}: {left} worker pods left, expected {want.workers_left}")
        if job.kind == SUSPEND_RESUME and found is not None:
            suspended = [c for c in _conditions(found) if c.get("type") == "Suspended"]
            if not suspended or suspended[0].get("reason") != RESUMED_REASON:
                problems.append(
                    f"{job.name}: Suspended condition {suspended}, expected reason {RESUMED_REASON}"
                )
    return problems


def worker_create_problems(
    plan: ChaosPlan, namespace: str, creates: Mapping[tuple[str, str], int]
) -> tuple[list[str], list[str]]:
    """(duplicates, missing): worker pods created more often than their job's runs, or less.

    A deleted job may have been deleted before its workers were all created, so only more than one
    create counts against it.
    """
    duplicates, missing = [], []
    for job in plan.jobs:
        want = job.expectation(plan.workers)
        for name in worker_names(job, plan.workers):
            count = creates.get((namespace, name), 0)
            if count > want.worker_creates:
                duplicates.append(f"{name}: created {count} times, expected {want.worker_creates}")
            elif count < want.worker_creates and want.outcome != DELETED:
                missing.append(f"{name}: created {count} times, expected {want.worker_creates}")
    return duplicates, missing


def orphans(objects: Iterable[Obj], owners: Iterable[Obj]) -> list[str]:
    """Objects with an owner reference to something that no longer exists (garbage the GC left)."""
    alive = {o["metadata"].get("uid") for o in owners}
    found = []
    listed = list(objects)
    alive |= {o["metadata"].get("uid") for o in listed}
    for obj in listed:
        meta = obj["metadata"]
        for ref in meta.get("ownerReferences") or ():
            if ref.get("uid") not in alive:
                found.append(
                    f"{obj.get('kind', '?')}/{meta['name']} (owner {ref.get('kind')}/{ref.get('name')})"
                )
    return found


TRACEBACK = "Traceback (most recent call last)"


def tracebacks(logs: Mapping[str, str]) -> dict[str, list[str]]:
    """Replica name -> what each traceback in its log ended with (the exception line), for logs with any.

    A traceback is either plain text on stderr (asyncio's last-resort handler, an uncaught exception) or
    inside a JSON log record's `exception` field.
    """
    found = {name: _exception_lines(text) for name, text in logs.items()}
    return {name: lines for name, lines in found.items() if lines}


def _exception_lines(text: str) -> list[str]:
    lines: list[str] = []
    for line in text.splitlines():
        if TRACEBACK not in line:
            lines.append(line)
            continue
        try:
            record = json.loads(line)
        except ValueError:
            lines.append(line)
            continue
        lines += str(record.get("exception") or record).splitlines() if isinstance(record, dict) else [line]
    ended = []
    for i, line in enumerate(lines):
        if line.startswith(TRACEBACK):
            after = (later for later in lines[i + 1 :] if later and not later[0].isspace())
            ended.append(next(after, "?"))
    return ended


def outcomes_by_kind(plan: ChaosPlan, jobs: Mapping[str, Obj]) -> dict[str, Counter[str]]:
    table: dict[str, Counter[str]] = {}
    for job in plan.jobs:
        table.setdefault(job.kind, Counter())[outcome(jobs.get(job.name))] += 1
    return table


def format_summary(figures: Mapping[str, Any], by_kind: Mapping[str, Counter[str]]) -> str:
    """The lines a note can quote: one `key: value` per figure, then the outcomes per kind of job."""
    lines = [f"chaos summary (seed {figures['seed']})"]
    lines += [f"  {key}: {_show(value)}" for key, value in figures.items() if key != "seed"]
    lines.append("  outcomes by kind:")
    for kind, counts in sorted(by_kind.items()):
        lines.append(f"    {kind}: " + ", ".join(f"{n} {what}" for what, n in sorted(counts.items())))
    return "\n".join(lines)


def _show(value: Any) -> str:
    if isinstance(value, Sequence) and not isinstance(value, str):
        return "[" + ", ".join(str(v) for v in value) + "]"
    return str(value)
