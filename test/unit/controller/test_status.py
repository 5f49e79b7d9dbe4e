"""Status computation (§2.12) with D5 #7 (eviction finishes the job) and D5 #8 (events once)."""

from __future__ import annotations

import copy
import datetime as dt
from typing import Any

from mpioperator.api.objects import Obj
from mpioperator.controller.status import StatusEvent, StatusResult, compute_status, failure
from test.unit.controller.jobs import pod, reference_job
from test.unit.controller.sync_fixtures import condition

NOW = dt.datetime(2026, 3, 4, 5, 6, 7, tzinfo=dt.UTC)
NOW_S = "2026-03-04T05:06:07Z"
EARLIER = "2026-03-04T05:00:00Z"
DONE = "2026-03-04T05:05:00Z"
CREATED = {
    "type": "Created",
    "status": "True",
    "reason": "MPIJobCreated",
    "message": "MPIJob default/pi is created.",
    "lastUpdateTime": EARLIER,
    "lastTransitionTime": EARLIER,
}
RUNNING_TRUE = {
    "type": "Running",
    "status": "True",
    "reason": "MPIJobRunning",
    "message": "MPIJob default/pi is running.",
    "lastUpdateTime": EARLIER,
    "lastTransitionTime": EARLIER,
}


def _cond(cond_type: str, status: str, reason: str, message: str, stamp: str = NOW_S) -> Obj:
    return condition(cond_type, status, reason, message, stamp)


def _job(status: Obj | None = None, suspend: bool = False, workers: int = 2) -> Obj:
    job = reference_job(workers)
    job["spec"]["runPolicy"]["suspend"] = suspend
    job["status"] = status if status is not None else {"conditions": [CREATED], "startTime": EARLIER}
    return job


def _launcher(*conditions: tuple[str, str, str], failed: int = 0, completion: str | None = None) -> Obj:
    status: Obj = {
        "conditions": [{"type": t, "status": "True", "reason": r, "message": m} for t, r, m in conditions]
    }
    if failed:
        status["failed"] = failed
    if completion:
        status["completionTime"] = completion
    return {"metadata": {"name": "pi-launcher", "namespace": "default", "uid": "L"}, "status": status}


def _workers(*phases: str) -> list[Obj]:
    return [pod(f"pi-worker-{i}", phase) for i, phase in enumerate(phases)]


def _compute(
    job: Obj,
    launcher: Obj | None = None,
    launcher_pods: list[Obj] | None = None,
    workers: list[Obj] | None = None,
) -> StatusResult:
    return compute_status(
        job, launcher=launcher, launcher_pods=launcher_pods or [], workers=workers or [], now=NOW
    )


def _again(job: Obj, result: StatusResult, **kwargs: Any) -> StatusResult:
    """The next sync, after the computed status was written back."""
    return _compute({**job, "status": result.status}, **kwargs)


def test_just_created_job_with_pending_pods_reports_empty_counts_and_no_events() -> None:
    job = _job()
    result = _compute(job, _launcher(), workers=_workers("Pending", "Pending"))
    assert result.status == {
        "conditions": [CREATED],
        "startTime": EARLIER,
        "replicaStatuses": {"Launcher": {}, "Worker": {}},
    }
    assert result.events == []


def test_launcher_running_but_workers_not_yet_is_not_running() -> None:
    result = _compute(_job(), _launcher(), [pod("pi-launcher-x", "Running")], _workers("Pending", "Running"))
    assert result.status["replicaStatuses"] == {"Launcher": {"active": 1}, "Worker": {"active": 1}}
    assert result.status["conditions"] == [CREATED]
    assert result.events == []


def test_launcher_active_counts_running_pods_not_pending_ones() -> None:
    pods = [pod("pi-launcher-a", "Pending"), pod("pi-launcher-b", "Running")]
    result = _compute(_job(), _launcher(), pods, _workers("Pending", "Pending"))
    assert result.status["replicaStatuses"]["Launcher"] == {"active": 1}


def test_workers_ready_without_launcher_report_only_worker_counts() -> None:
    job = _job(workers=16)
    result = _compute(job, None, workers=_workers(*["Running"] * 16))
    assert result.status["replicaStatuses"] == {"Worker": {"active": 16}}
    assert result.status["conditions"] == [CREATED]


def test_all_running_sets_running_with_one_event() -> None:
    job = _job()
    kwargs: Obj = {
        "launcher": _launcher(),
        "launcher_pods": [pod("pi-launcher-x", "Running")],
        "workers": _workers("Running", "Running"),
    }
    result = _compute(job, **kwargs)
    assert result.status["conditions"] == [
        CREATED,
        _cond("Running", "True", "MPIJobRunning", "MPIJob default/pi is running."),
    ]
    assert result.status["replicaStatuses"] == {"Launcher": {"active": 1}, "Worker": {"active": 2}}
    assert result.events == [StatusEvent("Normal", "MPIJobRunning", "MPIJob default/pi is running")]
    # D5 #8: upstream repeats MPIJobRunning on every sync; we emit it once.
    again = _again(job, result, **kwargs)
    assert again.events == []
    assert again.status == result.status


def test_launcher_as_worker_without_workers_runs_on_the_launcher_alone() -> None:
    job = _job(workers=0)
    result = _compute(job, _launcher(), [pod("pi-launcher-x", "Running")], [])
    assert result.status["conditions"][-1]["type"] == "Running"
    assert result.status["conditions"][-1]["status"] == "True"


def test_succeeded_without_ever_running_appends_running_false_at_completion_time() -> None:
    job = _job({"conditions": [CREATED], "startTime": EARLIER})
    launcher = _launcher(("SuccessCriteriaMet", "", ""), ("Complete", "", ""), completion=DONE)
    result = _compute(job, launcher)
    message = "MPIJob default/pi successfully completed."
    assert result.status == {
        "conditions": [
            CREATED,
            _cond("Succeeded", "True", "MPIJobSucceeded", message),
            _cond(
                "Running",
                "False",
                "MPIJobRunning",
                "MPIJob default/pi is finished but Running condition was never set.",
                DONE,
            ),
        ],
        "startTime": EARLIER,
        "completionTime": DONE,
        "replicaStatuses": {"Launcher": {"succeeded": 1}, "Worker": {}},
    }
    assert result.events == [StatusEvent("Normal", "MPIJobSucceeded", message)]


def test_succeeded_keeps_an_existing_completion_time() -> None:
    job = _job({"conditions": [CREATED], "startTime": EARLIER, "completionTime": EARLIER})
    result = _compute(job, _launcher(("Complete", "", ""), completion=DONE))
    assert result.status["completionTime"] == EARLIER


def test_succeeded_while_launcher_pod_still_seen_running_flips_running_false() -> None:
    job = _job({"conditions": [CREATED, RUNNING_TRUE], "startTime": EARLIER})
    launcher = _launcher(("Complete", "", ""), completion=DONE)
    result = _compute(job, launcher, [pod("pi-launcher-x", "Running")])
    assert result.status["conditions"] == [
        CREATED,
        {**RUNNING_TRUE, "status": "False"},
        _cond("Succeeded", "True", "MPIJobSucceeded", "MPIJob default/pi successfully completed."),
    ]
    assert result.status["replicaStatuses"]["Launcher"] == {"succeeded": 1}
    running = result.status["conditions"][1]
    assert running["lastTransitionTime"] <= result.status["completionTime"]
    assert running["lastUpdateTime"] <= result.status["completionTime"]


def test_launcher_without_completion_time_leaves_the_job_without_one() -> None:
    """Upstream's quirk (Appendix C #15) is kept: the copy only happens when the Job has one."""
    result = _compute(_job(), _launcher(("Complete", "", "")))
    assert "completionTime" not in result.status
    assert result.status["conditions"][-1]["lastTransitionTime"] == NOW_S


def test_backoff_limit_failure_names_the_newest_failed_launcher_pod() -> None:
    job = _job({"conditions": [CREATED], "startTime": EARLIER})
    launcher = _launcher(
        ("FailureTarget", "BackoffLimitExceeded", "Job has reached the specified backoff limit"),
        ("Failed", "BackoffLimitExceeded", "Job has reached the specified backoff limit"),
        failed=2,
    )
    pods = [
        {
            "metadata": {"name": "a", "creationTimestamp": "2026-03-04T05:01:00Z"},
            "status": {"phase": "Failed", "reason": "FailedReason1", "message": "first message"},
        },
        {
            "metadata": {"name": "b", "creationTimestamp": "2026-03-04T05:02:00Z"},
            "status": {"phase": "Failed", "reason": "FailedReason2", "message": "second message"},
        },
        {
            "metadata": {"name": "c", "creationTimestamp": "2026-03-04T05:03:00Z"},
            "status": {"phase": "Running", "reason": "NotFailed", "message": "not this one"},
        },
    ]
    result = _compute(job, launcher, pods)
    reason = "BackoffLimitExceeded/FailedReason2"
    message = "Job has reached the specified backoff limit: second message"
    assert result.status == {
        "conditions": [
            CREATED,
            _cond("Failed", "True", reason, message),
            _cond(
                "Running",
                "False",
                "MPIJobRunning",
                "MPIJob default/pi is finished but Running condition was never set.",
            ),
        ],
        "startTime": EARLIER,
        "completionTime": NOW_S,
        "replicaStatuses": {"Launcher": {"failed": 2}, "Worker": {}},
    }
    assert result.events == [StatusEvent("Warning", reason, message)]


def test_failure_without_reason_or_message_uses_upstream_defaults() -> None:
    launcher = _launcher(("Failed", "", ""))
    assert failure(_job(), launcher, []) == ("MPIJobFailed", "MPIJob default/pi has failed")


def test_other_failure_reasons_pass_through_verbatim() -> None:
    launcher = _launcher(("Failed", "DeadlineExceeded", "Job was active longer than specified deadline"))
    failed = [pod("x", "Failed", reason="DeadlineExceeded", message="ignored")]
    assert failure(_job(), launcher, failed) == (
        "DeadlineExceeded",
        "Job was active longer than specified deadline",
    )


def test_backoff_limit_without_a_failed_pod_keeps_the_job_reason() -> None:
    launcher = _launcher(("Failed", "BackoffLimitExceeded", "limit"))
    assert failure(_job(), launcher, [pod("x", "Running")]) == ("BackoffLimitExceeded", "limit")


def test_failure_message_is_truncated_to_1024_bytes() -> None:
    launcher = _launcher(("Failed", "BackoffLimitExceeded", "limit"))
    failed = [pod("x", "Failed", reason="Error", message="é" * 800)]
    reason, message = failure(_job(), launcher, failed)
    raw = message.encode()
    assert reason == "BackoffLimitExceeded/Error"
    assert len(raw) <= 1024
    assert raw.endswith(b"...")
    assert message.startswith("limit: é")


def test_a_failed_launcher_pod_alone_does_not_fail_the_job() -> None:
    result = _compute(_job(), _launcher(failed=1), [pod("pi-launcher-x", "Running")], _workers("Running"))
    assert result.status["replicaStatuses"]["Launcher"] == {"failed": 1, "active": 1}
    assert all(c["type"] != "Failed" for c in result.status["conditions"])


def test_eviction_fails_the_job_with_a_completion_time() -> None:
    """D5 #7: upstream leaves completionTime unset, so the job is never cleaned up (#647)."""
    job = _job({"conditions": [CREATED, RUNNING_TRUE], "startTime": EARLIER})
    workers = [pod("pi-worker-0", "Failed", reason="Evicted"), pod("pi-worker-1", "Running")]
    kwargs: Obj = {"launcher": _launcher(), "launcher_pods": [pod("l", "Running")], "workers": workers}
    result = _compute(job, **kwargs)
    assert result.status == {
        "conditions": [
            CREATED,
            {**RUNNING_TRUE, "status": "False"},
            _cond("Failed", "True", "MPIJobEvicted", "1/2 workers are evicted"),
        ],
        "startTime": EARLIER,
        "completionTime": NOW_S,
        "replicaStatuses": {"Launcher": {"active": 1}, "Worker": {"active": 1, "failed": 1}},
    }
    assert result.events == [StatusEvent("Warning", "MPIJobEvicted", "1/2 workers are evicted")]
    assert _again(job, result, **kwargs).events == []


def test_worker_counts_by_phase() -> None:
    workers = [
        pod("a", "Running"),
        pod("b", "Succeeded"),
        pod("c", "Failed", reason="Error"),
        pod("d", "Pending"),
        pod("e", "Unknown"),
    ]
    result = _compute(_job(workers=5), None, workers=workers)
    assert result.status["replicaStatuses"]["Worker"] == {"active": 1, "succeeded": 1, "failed": 1}
    assert all(c["type"] != "Failed" for c in result.status["conditions"])


def test_created_suspended_job() -> None:
    job = _job({"conditions": [CREATED]}, suspend=True)
    result = _compute(job, _launcher())
    assert result.status == {
        "conditions": [
            CREATED,
            _cond("Suspended", "True", "MPIJobSuspended", "MPIJob suspended"),
            _cond("Running", "False", "MPIJobSuspended", "MPIJob default/pi is suspended."),
        ],
        "replicaStatuses": {"Launcher": {}, "Worker": {}},
    }
    assert result.events == [StatusEvent("Normal", "MPIJobSuspended", "MPIJob suspended")]
    assert _again(job, result, launcher=_launcher()).events == []


def test_suspending_a_running_job_keeps_start_time_and_cached_launcher_activity() -> None:
    job = _job({"conditions": [CREATED, RUNNING_TRUE], "startTime": EARLIER}, suspend=True)
    result = _compute(job, _launcher(), [pod("pi-launcher-x", "Running")])
    assert result.status == {
        "conditions": [
            CREATED,
            _cond("Suspended", "True", "MPIJobSuspended", "MPIJob suspended"),
            _cond("Running", "False", "MPIJobSuspended", "MPIJob default/pi is suspended."),
        ],
        "startTime": EARLIER,
        "replicaStatuses": {"Launcher": {"active": 1}, "Worker": {}},
    }


def test_resuming_sets_start_time_and_marks_suspended_false() -> None:
    suspended = {"conditions": [CREATED], "replicaStatuses": {"Launcher": {}, "Worker": {}}}
    first = _compute(_job(suspended, suspend=True), _launcher())
    job = _job(first.status, suspend=False)
    result = _compute(job, _launcher(), workers=_workers("Pending", "Pending"))
    assert result.status == {
        "conditions": [
            CREATED,
            _cond("Running", "False", "MPIJobSuspended", "MPIJob default/pi is suspended."),
            _cond("Suspended", "False", "MPIJobResumed", "MPIJob resumed"),
        ],
        "startTime": NOW_S,
        "replicaStatuses": {"Launcher": {}, "Worker": {}},
    }
    assert result.events == [StatusEvent("Normal", "MPIJobResumed", "MPIJob resumed")]
    again = _again(job, result, launcher=_launcher(), workers=_workers("Pending", "Pending"))
    assert again.events == []
    assert again.status == result.status


def test_a_finished_job_yields_no_new_events_or_changes() -> None:
    """D5 #8: recomputing a finished job neither repeats MPIJobSucceeded nor touches the status."""
    job = _job()
    launcher = _launcher(("Complete", "", ""), completion=DONE)
    first = _compute(job, launcher)
    again = _again(job, first, launcher=launcher)
    assert again.events == []
    assert again.status == first.status
    failed_launcher = _launcher(("Failed", "BackoffLimitExceeded", "limit"), failed=1)
    failed = _compute(job, failed_launcher)
    assert _again(job, failed, launcher=failed_launcher).events == []


def test_compute_status_does_not_mutate_the_job() -> None:
    job = _job({"conditions": [CREATED, RUNNING_TRUE], "startTime": EARLIER})
    original = copy.deepcopy(job)
    _compute(job, _launcher(("Complete", "", ""), completion=DONE), [pod("l", "Running")])
    assert job == original
