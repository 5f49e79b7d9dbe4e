"""Condition machinery (§2.12.3): update/append semantics, filtering and transition times."""

from __future__ import annotations

import datetime as dt

import pytest

from mpioperator.api.objects import Obj
from mpioperator.controller.conditions import (
    find,
    format_time,
    is_finished,
    is_true,
    new_condition,
    parse_time,
    set_condition,
)
from test.unit.controller.sync_fixtures import condition

T0 = dt.datetime(2026, 1, 1, 0, 0, 0, tzinfo=dt.UTC)
T1 = T0 + dt.timedelta(minutes=1)
S0, S1 = "2026-01-01T00:00:00Z", "2026-01-01T00:01:00Z"


def _cond(cond_type: str, status: str, reason: str, message: str = "m", stamp: str = S0) -> Obj:
    return condition(cond_type, status, reason, message, stamp)


def test_new_condition_stamps_both_times_with_now() -> None:
    assert new_condition("Created", "True", "MPIJobCreated", "hi", T0) == _cond(
        "Created", "True", "MPIJobCreated", "hi"
    )


def test_time_format_round_trips_in_utc() -> None:
    offset = dt.datetime(2026, 1, 1, 2, 0, 0, tzinfo=dt.timezone(dt.timedelta(hours=2)))
    assert format_time(offset) == S0
    assert parse_time(S0) == T0
    assert parse_time(None) is None


def test_same_status_and_reason_changes_nothing_not_even_the_message() -> None:
    status: Obj = {
        "conditions": [_cond("Running", "True", "MPIJobRunning", "old"), _cond("Created", "True", "c")]
    }
    before = [dict(c) for c in status["conditions"]]
    assert set_condition(status, new_condition("Running", "True", "MPIJobRunning", "new", T1)) is False
    assert status["conditions"] == before


def test_same_status_other_reason_keeps_transition_time_and_moves_to_end() -> None:
    status: Obj = {"conditions": [_cond("Failed", "True", "MPIJobEvicted"), _cond("Created", "True", "c")]}
    assert set_condition(status, new_condition("Failed", "True", "BackoffLimitExceeded", "x", T1)) is True
    assert status["conditions"] == [
        _cond("Created", "True", "c"),
        {**_cond("Failed", "True", "BackoffLimitExceeded", "x", S1), "lastTransitionTime": S0},
    ]


def test_status_change_takes_new_times_and_moves_to_end() -> None:
    status: Obj = {
        "conditions": [_cond("Suspended", "True", "MPIJobSuspended"), _cond("Created", "True", "c")]
    }
    assert set_condition(status, new_condition("Suspended", "False", "MPIJobResumed", "r", T1)) is True
    assert status["conditions"] == [
        _cond("Created", "True", "c"),
        _cond("Suspended", "False", "MPIJobResumed", "r", S1),
    ]


def test_setting_a_condition_on_empty_status_appends_it() -> None:
    status: Obj = {}
    assert set_condition(status, new_condition("Created", "True", "MPIJobCreated", "m", T0)) is True
    assert status == {"conditions": [_cond("Created", "True", "MPIJobCreated")]}


@pytest.mark.parametrize("finishing", ["Succeeded", "Failed"])
def test_finishing_forces_running_false_keeping_its_reason_message_and_times(finishing: str) -> None:
    running = _cond("Running", "True", "MPIJobRunning", "is running.")
    status: Obj = {"conditions": [_cond("Created", "True", "c"), running]}
    set_condition(status, new_condition(finishing, "True", "r", "done", T1))
    assert status["conditions"] == [
        _cond("Created", "True", "c"),
        {**running, "status": "False"},
        _cond(finishing, "True", "r", "done", S1),
    ]
    assert running["status"] == "True", "the caller's condition objects are not mutated"


def test_succeeding_forces_an_earlier_failure_false() -> None:
    status: Obj = {"conditions": [_cond("Failed", "True", "MPIJobEvicted")]}
    set_condition(status, new_condition("Succeeded", "True", "MPIJobSucceeded", "ok", T1))
    assert status["conditions"][0] == {**_cond("Failed", "True", "MPIJobEvicted"), "status": "False"}
    assert is_finished(status)
    assert not is_true(status, "Failed")


def test_running_and_restarting_replace_each_other() -> None:
    status: Obj = {"conditions": [_cond("Restarting", "True", "x"), _cond("Created", "True", "c")]}
    set_condition(status, new_condition("Running", "True", "MPIJobRunning", "m", T1))
    assert [c["type"] for c in status["conditions"]] == ["Created", "Running"]
    set_condition(status, new_condition("Restarting", "True", "x", "m", T1))
    assert [c["type"] for c in status["conditions"]] == ["Created", "Restarting"]


def test_helpers_count_only_true_conditions() -> None:
    status: Obj = {"conditions": [_cond("Succeeded", "False", "x"), _cond("Failed", "False", "y")]}
    assert not is_finished(status)
    assert not is_true(status, "Succeeded")
    assert find(status, "Succeeded") is not None
    assert find(status, "Running") is None
