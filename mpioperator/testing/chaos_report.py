"""What a chaos run ended with, judged against its plan: outcomes, restarts, creates per attempt, pods of two
attempts at once, orphans; and its summary.

Pure functions over objects read from the API server and records read from the audit log, so the checks
themselves are unit-tested with hand-made inputs.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from mpioperator.api.extensions import restarts
from mpioperator.testing.audit import AuditRecord, committed_create_records
from mpioperator.testing.chaos_plan import (
    DELETED,
    FAILED,
    RESTART_KINDS,
    SUCCEEDED,
    SUSPEND_RESUME,
    ChaosPlan,
    Expectation,
    JobPlan,
)
from mpioperator.testing.chaos_pods import DELETED as POD_DELETED
from mpioperator.testing.chaos_pods import PodEvent

Obj = dict[str, Any]
# (resource, name, attempt label): "" for a child of a job that did not opt in to restarts.
CreateKey = tuple[str, str, str]
RESUMED_REASON = "MPIJobResumed"
JOB_NAME_LABEL = "training.kubeflow.org/job-name"


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


def job_mismatches(
    plan: ChaosPlan, jobs: Mapping[str, Obj], pods: Iterable[Obj], injected: Mapping[str, int] | None = None
) -> list[str]:
    """Every job whose end differs from its expectation: outcome, workers left, the resume it went through,
    the restarts counted for the worker failures `injected` into it (and a Failed job's reason)."""
    present = {p["metadata"]["name"] for p in pods}
    problems = []
    for job in plan.jobs:
        want = job.expectation(plan.workers, (injected or {}).get(job.name, 0))
        found = jobs.get(job.name)
        got = outcome(found)
        if got != want.outcome:
            problems.append(f"{job.name}: {got}, expected {want.outcome}")
            continue
        left = sum(1 for name in worker_names(job, plan.workers) if name in present)
        if left != want.workers_left:
            problems.append(f"{job.name}: {left} worker pods left, expected {want.workers_left}")
        if found is None:
            continue
        if job.kind == SUSPEND_RESUME:
            suspended = [c for c in _conditions(found) if c.get("type") == "Suspended"]
            if not suspended or suspended[0].get("reason") != RESUMED_REASON:
                problems.append(
                    f"{job.name}: Suspended condition {suspended}, expected reason {RESUMED_REASON}"
                )
        problems += _restart_mismatches(job.name, want, found)
    return problems


def _restart_mismatches(name: str, want: Expectation, found: Obj) -> list[str]:
    counted = restarts.restarts(found.get("status") or {})
    if counted != want.restarts:
        return [f"{name}: {counted} restarts counted, expected {want.restarts}"]
    if want.outcome != FAILED or not want.restarts:
        return []
    failed = next(c for c in _conditions(found) if c.get("type") == FAILED)
    problems = []
    if want.failed_reason and failed.get("reason") != want.failed_reason:
        problems.append(f"{name}: Failed with reason {failed.get('reason')}, expected {want.failed_reason}")
    if f"restarted {want.restarts} times" not in str(failed.get("message")):
        problems.append(f"{name}: Failed message {failed.get('message')!r} does not say it restarted")
    return problems


def creates_by_attempt(records: Iterable[AuditRecord], namespace: str) -> Counter[CreateKey]:
    """Committed creates of pods and Jobs in `namespace` by the attempt label in their body (the audit
    policy must log pods and Jobs with their bodies)."""
    found: Counter[CreateKey] = Counter()
    listed = list(records)
    for resource in ("pods", "jobs"):
        for r in committed_create_records(listed, resource):
            if r.namespace == namespace:
                labels = ((r.body or {}).get("metadata") or {}).get("labels") or {}
                found[(resource, r.name, str(labels.get(restarts.ATTEMPT_LABEL, "")))] += 1
    return found


def outside_deletions(records: Iterable[AuditRecord], namespace: str, user: str) -> Counter[CreateKey]:
    """Pods of `user` (the operator) removed by someone else before `user` deleted them, by attempt.

    kwok deletes a pod by name, without the uid precondition a kubelet sends, and sometimes twice: the
    second delete of an earlier attempt's pod can remove the new attempt's pod of the same name just
    created. The operator then rightly creates it again. Records of every user; the audit policy must log
    pod bodies of `user` and pod deletes of everyone. They are taken in the order the server answered
    them: kwok's delete can be received just before the create it then removes, and answered after it.
    """
    standing: dict[str, tuple[str, bool]] = {}  # name -> (attempt, whether `user` deleted it)
    found: Counter[CreateKey] = Counter()
    for r in sorted(records, key=lambda r: r.completed):
        if r.resource != "pods" or r.namespace != namespace or not r.succeeded:
            continue
        if r.user == user and r.verb == "create":
            labels = ((r.body or {}).get("metadata") or {}).get("labels") or {}
            standing[r.name] = (str(labels.get(restarts.ATTEMPT_LABEL, "")), False)
        elif r.verb == "delete" and r.name in standing:
            attempt, deleted = standing[r.name]
            if r.user == user:
                standing[r.name] = (attempt, True)
            elif not deleted:
                found[("pods", r.name, attempt)] += 1
                del standing[r.name]
    return found


def create_problems(
    plan: ChaosPlan,
    creates: Mapping[CreateKey, int],
    injected: Mapping[str, int] | None = None,
    removed: Mapping[CreateKey, int] | None = None,
) -> tuple[list[str], list[str]]:
    """(duplicates, missing): worker pods and launcher Jobs created more often than each attempt of their
    job should make them, or for an attempt the job should not have reached; or created less. A pod that
    someone else `removed` may be created once more for each removal.

    A deleted job may have been deleted before its children were all created, so only too many count
    against it.
    """
    duplicates, missing = [], []
    for job in plan.jobs:
        want = job.expectation(plan.workers, (injected or {}).get(job.name, 0))
        attempts = [str(a) for a in range(want.restarts + 1)] if job.kind in RESTART_KINDS else [""]
        children = [("pods", name, want.worker_creates) for name in worker_names(job, plan.workers)]
        children.append(("jobs", f"{job.name}-launcher", 1))
        expected = {(res, name, a): n for res, name, n in children for a in attempts}
        mine = {(res, name) for res, name, _ in children}
        made = {key: n for key, n in creates.items() if key[:2] in mine}
        for key in sorted(expected.keys() | made.keys()):
            count, wanted = made.get(key, 0), expected.get(key, 0)
            what = f"{key[0]}/{key[1]}" + (f" (attempt {key[2]})" if key[2] else "")
            if count > wanted + (removed or {}).get(key, 0):
                duplicates.append(f"{what}: created {count} times, expected {wanted}")
            elif count < wanted and want.outcome != DELETED:
                missing.append(f"{what}: created {count} times, expected {wanted}")
    return duplicates, missing


def restart_count_problems(records: Iterable[AuditRecord], namespace: str) -> list[str]:
    """Status writes that lost a counted restart or counted more than one at once: in the order the server
    received them, each job's `status.restarts` in successful writes never goes down nor up by more than
    one (the audit policy must log MPIJob status writes with their bodies)."""
    last: dict[str, int] = {}
    problems = []
    for r in records:
        if r.resource != "mpijobs/status" or r.namespace != namespace or not r.succeeded or r.body is None:
            continue
        counted = restarts.restarts(r.body.get("status") or {})
        before = last.get(r.name, 0)
        if counted < before or counted > before + 1:
            problems.append(f"{r.name}: restarts {before} -> {counted} at {r.received.isoformat()}")
        last[r.name] = counted
    return problems


def attempts_alive_together(events: Iterable[PodEvent]) -> list[str]:
    """Every pod that appeared while a pod of another attempt of its job was still there (terminating
    included): a restart makes nothing of the new attempt before the old one is gone."""
    alive: dict[str, PodEvent] = {}
    problems = []
    for event in events:
        if event.kind == POD_DELETED:
            alive.pop(event.uid, None)
            continue
        if event.uid not in alive:
            others = [o for o in alive.values() if o.job == event.job and o.attempt != event.attempt]
            if others:
                problems.append(
                    f"{event.job}: {event.name} of attempt {event.attempt} appeared while "
                    f"{others[0].name} of attempt {others[0].attempt} was there"
                )
        alive[event.uid] = event
    return problems


def earlier_attempts_left(jobs: Mapping[str, Obj], pods: Iterable[Obj]) -> list[str]:
    """Pods labelled with an attempt other than their job's current one (the job gone counts as none)."""
    left = []
    for pod in pods:
        meta = pod["metadata"]
        labels = meta.get("labels") or {}
        if restarts.ATTEMPT_LABEL not in labels:
            continue
        job = jobs.get(str(labels.get(JOB_NAME_LABEL, "")))
        current = None if job is None else restarts.current_attempt(job)
        if restarts.attempt_of(pod) != current:
            left.append(f"{meta['name']} of attempt {labels[restarts.ATTEMPT_LABEL]}, job at {current}")
    return left


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
