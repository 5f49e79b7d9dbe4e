"""The worker start-up deadline: off by default, per job by annotation, for all jobs by flag."""

from __future__ import annotations

import datetime as dt
from typing import Any

import pytest

from mpioperator.api.extensions.launch import WORKER_STARTUP_DEADLINE as ANNOTATION
from mpioperator.api.extensions.launch import whole_seconds
from mpioperator.controller.problems import PodProblem
from mpioperator.controller.startup_deadline import deadline_seconds, judge
from test.unit.controller.pods import NOW, job_pod, ready, stamp

Obj = dict[str, Any]


def _job(annotation: str | None = None, *, suspend: bool = False) -> Obj:
    meta: Obj = {"name": "j"}
    if annotation is not None:
        meta["annotations"] = {ANNOTATION: annotation}
    return {"metadata": meta, "spec": {"runPolicy": {"suspend": suspend}}}


def _started(seconds_ago: float, *conditions: Obj) -> Obj:
    return {"startTime": stamp(seconds_ago), "conditions": list(conditions)}


@pytest.mark.parametrize(
    ("value", "parsed"),
    [
        ("0", 0),
        ("300", 300),
        (" 5 ", 5),
        ("-1", None),
        ("5s", None),
        ("", None),
        # Digits str.isdigit() takes and int() refuses, or reads though Go's strconv would not.
        ("²", None),
        ("٣", None),
        # Kubernetes' second counts are int64s; anything longer overflows the deadline's float arithmetic.
        (str(2**63 - 1), 2**63 - 1),
        (str(2**63), None),
        ("9" * 4000, None),
        ("9" * 5000, None),
    ],
)
def test_only_whole_seconds_parse(value: str, parsed: int | None) -> None:
    assert whole_seconds(value) == parsed


@pytest.mark.parametrize(
    ("annotation", "flag", "seconds"),
    [(None, 0, 0), (None, 300, 300), ("60", 300, 60), ("0", 300, 0), ("soon", 300, 300)],
)
def test_the_annotation_wins_over_the_flag_and_zero_turns_it_off(
    annotation: str | None, flag: int, seconds: int
) -> None:
    assert deadline_seconds(_job(annotation), flag) == seconds


def _workers(*pods: Obj | None) -> dict[str, Obj | None]:
    return {f"j-worker-{i}": pod for i, pod in enumerate(pods)}


def test_workers_not_ready_after_the_deadline_are_listed_with_what_holds_them() -> None:
    workers = _workers(
        job_pod("j-worker-0", conditions=ready(True)),
        job_pod("j-worker-1", "Pending"),
        job_pod("j-worker-2", conditions=ready(False)),
        None,
    )
    problems = {"j-worker-1": PodProblem("j-worker-1", "Worker", "ErrImagePull", "", 0, 1)}
    verdict = judge(_job(), _started(11), workers, problems, seconds=10, now=NOW)
    assert verdict.expired
    assert verdict.message == (
        "3 of 4 workers not Ready within 10s of the job's start: "
        "j-worker-1 (ErrImagePull), j-worker-2 (not Ready), j-worker-3 (not created)"
    )


def test_before_the_deadline_it_asks_to_be_looked_at_again_when_it_passes() -> None:
    verdict = judge(_job(), _started(4), _workers(job_pod("j-worker-0", "Pending")), {}, seconds=10, now=NOW)
    assert not verdict.expired and verdict.recheck_after == pytest.approx(6)


def test_all_workers_ready_in_time_is_fine() -> None:
    workers = _workers(job_pod("j-worker-0", conditions=ready(True)))
    assert judge(_job(), _started(60), workers, {}, seconds=10, now=NOW).expired is False


@pytest.mark.parametrize(
    ("job", "status"),
    [
        (_job(suspend=True), _started(60)),
        (_job(), _started(60, {"type": "Running", "status": "True"})),
        (_job(), _started(60, {"type": "Failed", "status": "True"})),
        (_job(), {"conditions": []}),
    ],
)
def test_no_deadline_while_suspended_once_running_when_finished_or_not_started(job: Obj, status: Obj) -> None:
    verdict = judge(job, status, _workers(job_pod("j-worker-0", "Pending")), {}, seconds=10, now=NOW)
    assert verdict.expired is False and verdict.recheck_after is None


def test_a_zero_deadline_is_no_deadline() -> None:
    verdict = judge(_job(), _started(600), _workers(None), {}, seconds=0, now=NOW)
    assert verdict.expired is False and verdict.recheck_after is None


def test_the_deadline_counts_from_the_start_time_which_a_resume_sets_again() -> None:
    # startTime 5 s ago although the job is hours old: a resume reset it.
    status = _started(5, {"type": "Suspended", "status": "False"})
    verdict = judge(_job(), status, _workers(None), {}, seconds=10, now=NOW + dt.timedelta(seconds=0))
    assert not verdict.expired and verdict.recheck_after == pytest.approx(5)


def test_a_job_resumed_in_this_sync_starts_the_clock_again_rather_than_failing_on_its_old_start() -> None:
    status = _started(3600, {"type": "Suspended", "status": "True"})
    verdict = judge(_job(), status, _workers(None), {}, seconds=10, now=NOW)
    assert not verdict.expired and verdict.recheck_after == 10
