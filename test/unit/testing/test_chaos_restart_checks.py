"""The chaos test's judges of whole-job restarts on hand-made inputs: each is shown passing on a clean
history and failing on one doctored the way a lost or doubled attempt would leave it."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from mpioperator.api.extensions import restarts
from mpioperator.testing.audit import AuditRecord
from mpioperator.testing.chaos_plan import (
    EVICTED_REASON,
    FAILED,
    RESTART,
    RESTART_EXHAUST,
    RESTART_ON_FAILURE,
    SUCCEEDED,
    ChaosPlan,
    JobPlan,
    chaos_plan,
)
from mpioperator.testing.chaos_pods import ADDED, DELETED, MODIFIED, PodEvent
from mpioperator.testing.chaos_report import (
    attempts_alive_together,
    create_problems,
    creates_by_attempt,
    earlier_attempts_left,
    job_mismatches,
    outside_deletions,
    restart_count_problems,
)

T0 = datetime(2026, 11, 27, 12, 0, 0, tzinfo=UTC)
NS = "chaos"


def restart_plan(kind: str, failures: int) -> ChaosPlan:
    return ChaosPlan(1, 2, (JobPlan("r", kind, 0.0, 30, 0.0, failures=failures),), ())


def ended(outcome: str, restarted: int, reason: str = "", message: str = "") -> dict[str, Any]:
    status: dict[str, Any] = {
        "conditions": [{"type": outcome, "status": "True", "reason": reason, "message": message}]
    }
    if restarted:
        status["restarts"] = restarted
    return {"metadata": {"name": "r", "uid": "uid-r"}, "status": status}


def test_restart_jobs_are_planned_with_their_policy_limit_and_failures() -> None:
    plan = chaos_plan(7)
    by_kind = {j.kind: j for j in plan.jobs}
    annotations = by_kind[RESTART_EXHAUST].body(plan.workers)["metadata"]["annotations"]
    assert annotations == {
        restarts.RESTART_POLICY: "OnWorkerFailure",
        restarts.MAX_RESTARTS: "1",
        restarts.RESTART_BACKOFF: "1",
    }
    assert by_kind[RESTART_EXHAUST].failures == 2
    assert 1 <= by_kind[RESTART].failures <= 2
    on_failure = by_kind[RESTART_ON_FAILURE].body(plan.workers)
    assert on_failure["metadata"]["annotations"][restarts.RESTART_POLICY] == "OnFailure"
    assert all(
        j.failures == 0 for j in plan.jobs if j.kind not in (RESTART, RESTART_EXHAUST, RESTART_ON_FAILURE)
    )


def test_a_restart_job_must_count_one_restart_per_injected_failure() -> None:
    plan = restart_plan(RESTART, 2)
    assert job_mismatches(plan, {"r": ended(SUCCEEDED, 2)}, [], {"r": 2}) == []
    # The launcher finished an attempt before its failure landed: one failure, one restart.
    assert job_mismatches(plan, {"r": ended(SUCCEEDED, 1)}, [], {"r": 1}) == []
    assert job_mismatches(plan, {"r": ended(SUCCEEDED, 3)}, [], {"r": 2}) == [
        "r: 3 restarts counted, expected 2"
    ]
    assert job_mismatches(plan, {"r": ended(SUCCEEDED, 1)}, [], {"r": 2}) == [
        "r: 1 restarts counted, expected 2"
    ]


def test_an_ordinary_job_that_counted_a_restart_is_a_mismatch() -> None:
    plan = ChaosPlan(1, 2, (JobPlan("r", "succeed", 0.0, 30, 0.0),), ())
    assert job_mismatches(plan, {"r": ended(SUCCEEDED, 1)}, []) == ["r: 1 restarts counted, expected 0"]


def test_an_exhausted_job_must_fail_with_the_last_reason_and_say_it_restarted() -> None:
    plan = restart_plan(RESTART_EXHAUST, 2)
    note = "restarted 1 times, the most mpioperator.io/max-restarts allows"
    good = ended(FAILED, 1, EVICTED_REASON, f"worker r-worker-1 was evicted; {note}")
    assert job_mismatches(plan, {"r": good}, [], {"r": 2}) == []
    wrong_reason = ended(FAILED, 1, "MPIJobFailed", note)
    assert job_mismatches(plan, {"r": wrong_reason}, [], {"r": 2}) == [
        f"r: Failed with reason MPIJobFailed, expected {EVICTED_REASON}"
    ]
    silent = ended(FAILED, 1, EVICTED_REASON, "worker r-worker-1 was evicted")
    assert len(job_mismatches(plan, {"r": silent}, [], {"r": 2})) == 1
    # Only one failure landed: the job should have succeeded after its one restart.
    assert job_mismatches(plan, {"r": good}, [], {"r": 1}) == ["r: Failed, expected Succeeded"]


def test_an_on_failure_job_ends_failed_after_its_limit_whatever_the_workers_did() -> None:
    plan = restart_plan(RESTART_ON_FAILURE, 1)
    done = ended(FAILED, 2, "BackoffLimitExceeded", "launcher failed; restarted 2 times, the most ...")
    assert job_mismatches(plan, {"r": done}, [], {"r": 0}) == []
    assert job_mismatches(plan, {"r": ended(FAILED, 3, "x", "restarted 3 times")}, [], {"r": 1}) == [
        "r: 3 restarts counted, expected 2"
    ]


def test_each_attempt_creates_its_workers_and_launcher_job_once() -> None:
    plan = restart_plan(RESTART, 1)
    clean = {
        (res, name, attempt): 1
        for res, name in (("pods", "r-worker-0"), ("pods", "r-worker-1"), ("jobs", "r-launcher"))
        for attempt in ("0", "1")
    }
    assert create_problems(plan, clean, {"r": 1}) == ([], [])
    twice = clean | {("pods", "r-worker-1", "1"): 2}
    assert create_problems(plan, twice, {"r": 1}) == (
        ["pods/r-worker-1 (attempt 1): created 2 times, expected 1"],
        [],
    )
    beyond = clean | {("jobs", "r-launcher", "2"): 1}
    assert create_problems(plan, beyond, {"r": 1}) == (
        ["jobs/r-launcher (attempt 2): created 1 times, expected 0"],
        [],
    )
    lost = {key: n for key, n in clean.items() if key != ("pods", "r-worker-0", "1")}
    assert create_problems(plan, lost, {"r": 1}) == (
        [],
        ["pods/r-worker-0 (attempt 1): created 0 times, expected 1"],
    )


def record(
    seconds: float,
    resource: str,
    name: str,
    body: dict[str, Any] | None,
    code: int = 201,
    verb: str = "create",
    user: str = "op",
) -> AuditRecord:
    return AuditRecord(at(seconds), at(seconds), user, user, verb, resource, NS, name, code, body)


def at(seconds: float) -> datetime:
    return T0 + timedelta(seconds=seconds)


def labelled(attempt: str) -> dict[str, Any]:
    return {"metadata": {"labels": {restarts.ATTEMPT_LABEL: attempt}}}


def test_creates_are_told_apart_by_the_attempt_label_in_their_body() -> None:
    records = [
        record(0, "pods", "r-worker-0", labelled("0")),
        record(1, "pods", "r-worker-0", None, code=200, verb="delete"),
        # Answered 504 while the API server shut down, but the pod was there: the next delete found it.
        record(2, "pods", "r-worker-0", labelled("1"), code=504),
        record(9, "pods", "r-worker-0", None, code=200, verb="delete"),
        record(3, "jobs", "r-launcher", labelled("1")),
        record(4, "pods", "s-worker-0", {"metadata": {}}),
    ]
    assert creates_by_attempt(records, NS) == {
        ("pods", "r-worker-0", "0"): 1,
        ("pods", "r-worker-0", "1"): 1,
        ("jobs", "r-launcher", "1"): 1,
        ("pods", "s-worker-0", ""): 1,
    }
    assert creates_by_attempt(records, "elsewhere") == {}


def test_a_pod_removed_by_someone_else_before_the_operator_deleted_it_may_be_made_again() -> None:
    def delete(seconds: float, user: str, code: int = 200) -> AuditRecord:
        return record(seconds, "pods", "r-worker-0", None, code=code, verb="delete", user=user)

    records = [
        record(0, "pods", "r-worker-0", labelled("0")),
        delete(5, "op"),  # the restart deletes attempt 0's pod ...
        delete(5.1, "kwok"),  # ... which kwok then removes
        record(5.5, "pods", "r-worker-0", labelled("1")),
        delete(5.6, "kwok"),  # kwok's stale second delete, by name: it removes attempt 1's new pod
        record(6, "pods", "r-worker-0", labelled("1")),
        delete(7, "kwok", code=404),
    ]
    removed = outside_deletions(records, NS, "op")
    assert removed == {("pods", "r-worker-0", "1"): 1}
    plan = ChaosPlan(1, 1, (JobPlan("r", RESTART, 0.0, 30, 0.0, failures=1),), ())
    creates = creates_by_attempt(records, NS) | {
        ("jobs", "r-launcher", "0"): 1,
        ("jobs", "r-launcher", "1"): 1,
    }
    assert create_problems(plan, creates, {"r": 1}, removed) == ([], [])
    # Without kwok's removal the second create is the operator making attempt 1's worker twice.
    assert create_problems(plan, creates, {"r": 1}) == (
        ["pods/r-worker-0 (attempt 1): created 2 times, expected 1"],
        [],
    )
    # Received just before the create, answered after it: the delete removed the new pod.
    late = [
        records[0],
        delete(5, "op"),
        delete(5.1, "kwok"),
        record(5.5, "pods", "r-worker-0", labelled("1")),
    ]
    answered_late = AuditRecord(
        at(5.4), at(5.6), "kwok", "kwok", "delete", "pods", NS, "r-worker-0", 200, None
    )
    assert outside_deletions([*late, answered_late], NS, "op") == {("pods", "r-worker-0", "1"): 1}
    # The operator deleting its own pod and making it again in the same attempt is never excused.
    own = [record(0, "pods", "r-worker-0", labelled("0")), delete(1, "op"), delete(1.1, "kwok")]
    assert outside_deletions(own, NS, "op") == {}


def status_write(seconds: float, restarted: int | None, code: int = 200, name: str = "r") -> AuditRecord:
    status = {} if restarted is None else {"restarts": restarted}
    return record(seconds, "mpijobs/status", name, {"status": status}, code=code, verb="update")


def test_status_writes_must_count_restarts_one_at_a_time_and_never_lose_one() -> None:
    steady = [status_write(0, None), status_write(1, 1), status_write(2, 1), status_write(3, 2)]
    assert restart_count_problems(steady, NS) == []
    # A stale leader's write refused with a Conflict changes nothing.
    assert restart_count_problems([*steady, status_write(4, 1, code=409)], NS) == []
    lost = [status_write(0, 1), status_write(1, 2), status_write(2, 1)]
    assert restart_count_problems(lost, NS) == [
        f"r: restarts 2 -> 1 at {(T0 + timedelta(seconds=2)).isoformat()}"
    ]
    doubled = [status_write(0, None), status_write(1, 2)]
    assert len(restart_count_problems(doubled, NS)) == 1
    assert restart_count_problems([status_write(0, 1, name="a"), status_write(1, 1, name="b")], NS) == []


def event(kind: str, name: str, attempt: int, uid: str = "") -> PodEvent:
    return PodEvent(kind, "r", name, uid or f"{name}-{attempt}", attempt)


def test_a_new_attempts_pod_may_appear_only_once_the_old_attempts_pods_are_gone() -> None:
    clean = [
        event(ADDED, "r-worker-0", 0),
        event(ADDED, "r-launcher-x", 0),
        event(MODIFIED, "r-worker-0", 0),  # terminating
        event(DELETED, "r-worker-0", 0),
        event(DELETED, "r-launcher-x", 0),
        event(ADDED, "r-worker-0", 1),
        PodEvent(ADDED, "other", "other-worker-0", "o", 0),
    ]
    assert attempts_alive_together(clean) == []
    early = [event(ADDED, "r-worker-0", 0), event(MODIFIED, "r-worker-0", 0), event(ADDED, "r-worker-1", 1)]
    assert attempts_alive_together(early) == [
        "r: r-worker-1 of attempt 1 appeared while r-worker-0 of attempt 0 was there"
    ]


def test_pods_of_an_attempt_other_than_the_jobs_current_one_are_left_behind() -> None:
    def pod(name: str, job: str, attempt: str) -> dict[str, Any]:
        labels = {restarts.ATTEMPT_LABEL: attempt, "training.kubeflow.org/job-name": job}
        return {"metadata": {"name": name, "labels": labels}}

    jobs = {"r": ended(SUCCEEDED, 1)}
    plain = {"metadata": {"name": "s-worker-0", "labels": {"training.kubeflow.org/job-name": "s"}}}
    assert earlier_attempts_left(jobs, [pod("r-launcher-b", "r", "1"), plain]) == []
    assert earlier_attempts_left(jobs, [pod("r-launcher-a", "r", "0")]) == [
        "r-launcher-a of attempt 0, job at 1"
    ]
    assert earlier_attempts_left({}, [pod("g-worker-0", "g", "0")]) == [
        "g-worker-0 of attempt 0, job at None"
    ]
