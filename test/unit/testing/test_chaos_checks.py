"""The chaos test's judges on hand-made inputs: a check that cannot fail proves nothing, so each is shown
failing on the fault it looks for and passing without it."""

from __future__ import annotations

import json
from collections import Counter
from datetime import UTC, datetime, timedelta
from typing import Any

from mpioperator.testing.audit import WRITE_VERBS, AuditRecord, audit_policy, committed_creates, parse_record
from mpioperator.testing.chaos_plan import (
    CLEAN_NONE,
    DELETE,
    FAIL,
    MIX,
    SUCCEED,
    SUSPEND_RESUME,
    ChaosPlan,
    JobPlan,
    chaos_plan,
)
from mpioperator.testing.chaos_report import create_problems, job_mismatches, orphans, tracebacks
from mpioperator.testing.lease_audit import handover_gaps, lease_writes, tenures, writes_without_lease

T0 = datetime(2026, 11, 23, 12, 0, 0, tzinfo=UTC)
NS, LEASE = "mpi-operator", "mpi-operator"


def at(seconds: float) -> datetime:
    return T0 + timedelta(seconds=seconds)


def lease(
    seconds: float, credential: str, holder: str, *, code: int = 200, duration: int = 15
) -> AuditRecord:
    body = {"spec": {"holderIdentity": holder, "leaseDurationSeconds": duration}}
    return AuditRecord(
        at(seconds), at(seconds + 0.01), "op", credential, "update", "leases", NS, LEASE, code, body
    )


def write(
    seconds: float, credential: str, name: str = "pi-worker-0", code: int = 201, verb: str = "create"
) -> AuditRecord:
    return AuditRecord(at(seconds), at(seconds + 0.01), "op", credential, verb, "pods", "jobs", name, code)


def why(records: list[AuditRecord]) -> list[str]:
    return [v.why for v in writes_without_lease(sorted(records, key=lambda r: r.received), NS, LEASE)]


def test_writes_by_the_holder_between_its_renewals_are_allowed() -> None:
    records = [lease(0, "A", "a"), write(1, "A"), lease(3, "A", "a"), write(16, "A")]
    assert why(records) == []


def test_a_write_after_another_replica_took_the_lease_over_is_flagged() -> None:
    records = [lease(0, "A", "a"), lease(20, "B", "b"), write(21, "B"), write(21.5, "A")]
    assert why(records) == [f"the lease was held by b since {at(20).isoformat()}"]


def test_a_write_after_the_writers_own_lease_expired_is_flagged_even_if_nobody_took_over() -> None:
    assert len(why([lease(0, "A", "a", duration=15), write(15.5, "A")])) == 1


def test_writes_before_acquiring_after_releasing_and_by_a_stranger_are_flagged() -> None:
    records = [
        lease(1, "B", "b"),
        write(0.5, "B"),  # before anyone held it
        lease(5, "A", "a"),  # A takes it (B's tenure ends)
        write(6, "B"),  # B after losing it
        lease(8, "A", ""),  # A releases
        write(9, "A"),  # A after releasing
        write(9, "C"),  # C never held it
    ]
    assert len(why(records)) == 4


def test_failed_lease_writes_give_no_tenure_but_failed_writes_still_count_as_sent() -> None:
    records = [lease(0, "A", "a"), lease(1, "B", "b", code=409), write(2, "B", code=409)]
    assert why(records) == ["this credential never held the lease"]


def test_tenures_and_handover_gaps_follow_the_holder_changes() -> None:
    writes = lease_writes(
        [
            lease(0, "A", "a"),
            lease(3, "A", "a"),
            lease(20, "B", "b"),
            lease(23, "B", ""),
            lease(24, "A2", "a2"),
        ],
        NS,
        LEASE,
    )
    held = tenures(writes)
    assert [(t.holder, t.ended_by) for t in held] == [
        ("a", "taken over"),
        ("b", "released"),
        ("a2", "still held"),
    ]
    assert handover_gaps(held) == [17.0, 4.0]


def test_audit_lines_give_the_token_id_as_credential_and_keep_lease_bodies() -> None:
    line = json.dumps(
        {
            "stage": "ResponseComplete",
            "verb": "update",
            "user": {"username": "op", "extra": {"authentication.kubernetes.io/credential-id": ["JTI=x"]}},
            "objectRef": {"resource": "leases", "namespace": NS, "name": LEASE},
            "responseStatus": {"code": 200},
            "requestReceivedTimestamp": "2026-11-23T12:00:00.000001Z",
            "stageTimestamp": "2026-11-23T12:00:00.002Z",
            "requestObject": {"spec": {"holderIdentity": "a"}},
        }
    )
    record = parse_record(line)
    assert record is not None
    assert (record.credential, record.received, record.body) == (
        "JTI=x",
        T0 + timedelta(microseconds=1),
        {"spec": {"holderIdentity": "a"}},
    )


def test_the_policy_logs_bodies_only_for_the_named_resources_and_only_for_the_user() -> None:
    rules: Any = audit_policy("op", bodies_of=[("coordination.k8s.io", "leases")])["rules"]
    assert rules[0]["level"] == "Request" and rules[0]["resources"] == [
        {"group": "coordination.k8s.io", "resources": ["leases"]}
    ]
    assert rules[1]["level"] == "Metadata" and "resources" not in rules[1]
    assert all(rule.get("users") == ["op"] for rule in rules[:2]) and rules[2] == {"level": "None"}


def test_the_policy_logs_deletes_of_the_named_resources_by_anyone_after_the_users_writes() -> None:
    rules: Any = audit_policy("op", deletes_of=[("", "pods")])["rules"]
    assert rules[0] == {"level": "Metadata", "users": ["op"], "verbs": list(WRITE_VERBS)}
    assert rules[1] == {
        "level": "Metadata",
        "verbs": ["delete"],
        "resources": [{"group": "", "resources": ["pods"]}],
    }
    assert rules[2] == {"level": "None"}


def test_the_plan_is_a_function_of_the_seed_with_the_requested_mix() -> None:
    assert chaos_plan(7) == chaos_plan(7)
    assert chaos_plan(7) != chaos_plan(8)
    plan = chaos_plan(7)
    assert Counter(j.kind for j in plan.jobs) == Counter(MIX)
    assert Counter(f.kind for f in plan.faults) == {
        "kill-leader": 5,
        "restart-apiserver": 1,
        "compact-etcd": 1,
    }
    assert len({j.name for j in plan.jobs}) == sum(MIX.values())


def one_job_plan(kind: str, workers: int = 2) -> ChaosPlan:
    return ChaosPlan(1, workers, (JobPlan(f"j-{kind}", kind, 0.0, 10, 0.0),), ())


def mpijob(name: str, *conditions: tuple[str, str, str]) -> dict[str, Any]:
    return {
        "metadata": {"name": name, "uid": f"uid-{name}"},
        "status": {"conditions": [{"type": t, "status": s, "reason": r} for t, s, r in conditions]},
    }


def pod(name: str, owner_uid: str = "", kind: str = "Pod") -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "uid": f"uid-{name}"}
    if owner_uid:
        meta["ownerReferences"] = [{"uid": owner_uid, "kind": "MPIJob", "name": "x"}]
    return {"kind": kind, "metadata": meta}


def test_outcomes_and_workers_left_are_judged_per_kind() -> None:
    plan = one_job_plan(CLEAN_NONE)
    succeeded = {"j-clean-none": mpijob("j-clean-none", ("Succeeded", "True", "MPIJobSucceeded"))}
    both_left = [pod("j-clean-none-worker-0"), pod("j-clean-none-worker-1")]
    assert job_mismatches(plan, succeeded, both_left) == []
    assert job_mismatches(plan, succeeded, both_left[:1]) == ["j-clean-none: 1 worker pods left, expected 2"]
    assert job_mismatches(one_job_plan(FAIL), succeeded | {"j-fail": mpijob("j-fail")}, []) == [
        "j-fail: Pending, expected Failed"
    ]
    assert job_mismatches(one_job_plan(DELETE), {}, []) == []


def test_a_suspended_job_must_show_it_was_resumed() -> None:
    plan = one_job_plan(SUSPEND_RESUME)
    done = ("Succeeded", "True", "MPIJobSucceeded")
    resumed = {"j-suspend-resume": mpijob("j-suspend-resume", ("Suspended", "False", "MPIJobResumed"), done)}
    never = {"j-suspend-resume": mpijob("j-suspend-resume", done)}
    assert job_mismatches(plan, resumed, []) == []
    assert len(job_mismatches(plan, never, [])) == 1


def test_worker_and_launcher_creates_count_duplicates_and_missing_per_planned_run() -> None:
    plan = ChaosPlan(
        1,
        1,
        (
            JobPlan("s", SUCCEED, 0, 10, 0),
            JobPlan("r", SUSPEND_RESUME, 0, 10, 0),
            JobPlan("d", DELETE, 0, 10, 0),
        ),
        (),
    )
    creates = {
        ("pods", "s-worker-0", ""): 2,
        ("jobs", "s-launcher", ""): 1,
        ("pods", "r-worker-0", ""): 1,
        ("jobs", "r-launcher", ""): 2,
    }
    duplicates, missing = create_problems(plan, creates)
    assert duplicates == [
        "pods/s-worker-0: created 2 times, expected 1",
        "jobs/r-launcher: created 2 times, expected 1",
    ]
    # A deleted job's missing children are fine.
    assert missing == ["pods/r-worker-0: created 1 times, expected 2"]


def test_only_successful_creates_are_counted() -> None:
    records = [write(0, "A", "p"), write(1, "A", "p", code=409), write(2, "A", "q")]
    assert committed_creates(records, "pods") == Counter({("jobs", "p"): 1, ("jobs", "q"): 1})


def delete(seconds: float, name: str, code: int = 200) -> AuditRecord:
    return write(seconds, "A", name, code, verb="delete")


def test_a_create_answered_504_counts_once_a_later_write_finds_the_object() -> None:
    # The API server's handler timed out while it shut down, but the pod reached etcd: deleted later.
    deleted = [write(0, "A", "p"), delete(1, "p"), write(2, "A", "p", code=504), delete(9, "p")]
    refused = [write(0, "A", "p", code=504), write(3, "A", "p", code=409)]
    assert committed_creates(deleted, "pods") == Counter({("jobs", "p"): 2})
    assert committed_creates(refused, "pods") == Counter({("jobs", "p"): 1})


def test_a_create_answered_504_does_not_count_when_nothing_shows_it_committed() -> None:
    created_again = [write(0, "A", "p", code=504), write(3, "A", "p")]
    not_found = [write(0, "A", "p", code=504), delete(3, "p", code=404)]
    never_touched = [write(0, "A", "p", code=504)]
    # The name was taken when the 504 create came, so the delete after it removed the first pod.
    name_taken = [write(0, "A", "p"), write(1, "A", "p", code=504), delete(2, "p")]
    assert committed_creates(created_again, "pods") == Counter({("jobs", "p"): 1})
    assert committed_creates(not_found, "pods") == Counter()
    assert committed_creates(never_touched, "pods") == Counter()
    assert committed_creates(name_taken, "pods") == Counter({("jobs", "p"): 1})


def test_children_whose_owner_is_gone_are_orphans() -> None:
    job = mpijob("a")
    kept = pod("a-worker-0", owner_uid="uid-a")
    gone = pod("b-worker-0", owner_uid="uid-b")
    launcher_pod = pod("a-launcher-x", owner_uid="uid-a-launcher")
    launcher = pod("a-launcher", owner_uid="uid-a", kind="Job")
    assert orphans([kept, launcher, launcher_pod], [job]) == []
    assert orphans([kept, gone], [job]) == ["Pod/b-worker-0 (owner MPIJob/x)"]


def test_tracebacks_in_json_records_and_on_stderr_are_found_with_their_exception_line() -> None:
    record = {
        "event": "error syncing",
        "exception": "Traceback (most recent call last):\n  File x\nKeyError: 'a'",
    }
    stderr = "Future exception was never retrieved\nTraceback (most recent call last):\n  File y\n    z()\nApiError: 0"
    text = f"ok\n{json.dumps(record)}\n{stderr}\n" + json.dumps({"event": "fine"})
    assert tracebacks({"a": "fine", "b": text}) == {"b": ["KeyError: 'a'", "ApiError: 0"]}
