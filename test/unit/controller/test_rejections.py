"""Which refusals hold a job, what the condition says, and how long the hold lasts (decisions-local L11)."""

from __future__ import annotations

import datetime as dt

import pytest

from mpioperator.controller.rejections import (
    COND_CHILD_REJECTED,
    RECHECK_SECONDS,
    ChildRejected,
    Holds,
    is_permanent,
    put_condition,
    rejected_condition,
)
from mpioperator.kube import errors

NOW = dt.datetime(2026, 3, 4, 5, 6, 7, tzinfo=dt.UTC)
LATER = NOW + dt.timedelta(minutes=1)
INVALID = errors.Invalid(
    422, "Invalid", 'Pod "pi-worker-0" is invalid: spec.containers[0].name: Invalid value'
)
FORBIDDEN = errors.Forbidden(403, "Forbidden", 'pods "pi-worker-0" is forbidden: exceeded quota: q')


@pytest.mark.parametrize(
    ("error", "permanent"),
    [
        (INVALID, True),
        (FORBIDDEN, True),
        (errors.Conflict(409, "Conflict", "modified"), False),
        (errors.TooManyRequests(429, "TooManyRequests", "slow down"), False),
        (errors.ApiError(500, "InternalError", "etcd"), False),
        (errors.ServerTimeout(504, "Timeout", "late"), False),
        (errors.ApiError(0, "", "connection reset"), False),
        (errors.NotFound(404, "NotFound", "gone"), False),
    ],
)
def test_only_invalid_and_forbidden_are_permanent(error: errors.ApiError, permanent: bool) -> None:
    assert is_permanent(error) is permanent


def test_the_rejection_names_the_object_and_carries_the_servers_words() -> None:
    created = ChildRejected("Pod", "pi-worker-0", "created", INVALID)
    assert created.reason == "ChildInvalid"
    assert created.message == f"Pod pi-worker-0 could not be created: {INVALID.message}"
    updated = ChildRejected("Job", "pi-launcher", "updated", FORBIDDEN)
    assert (updated.reason, updated.message.split(":")[0]) == (
        "ChildForbidden",
        "Job pi-launcher could not be updated",
    )


def test_a_long_server_message_is_truncated_to_1024_bytes() -> None:
    long = errors.Invalid(422, "Invalid", "x" * 5000)
    message = ChildRejected("Pod", "p", "created", long).message
    assert len(message.encode()) == 1024 and message.endswith("...")


def test_the_same_refusal_again_is_no_news_and_keeps_the_condition_as_it_was() -> None:
    status: dict[str, object] = {}
    first, news = rejected_condition(status, ChildRejected("Pod", "p", "created", INVALID), NOW)
    assert news
    put_condition(status, first, COND_CHILD_REJECTED)
    again, news = rejected_condition(status, ChildRejected("Pod", "p", "created", INVALID), LATER)
    assert not news and again == first


def test_a_different_refusal_is_news_and_keeps_the_transition_time() -> None:
    status: dict[str, object] = {}
    first, _ = rejected_condition(status, ChildRejected("Pod", "p", "created", INVALID), NOW)
    put_condition(status, first, COND_CHILD_REJECTED)
    other, news = rejected_condition(status, ChildRejected("Job", "l", "created", INVALID), LATER)
    assert news and other["lastTransitionTime"] == first["lastTransitionTime"]
    assert other["lastUpdateTime"] != first["lastUpdateTime"]


def test_put_condition_moves_a_new_condition_to_the_end_and_removes_one_for_none() -> None:
    status = {
        "conditions": [{"type": COND_CHILD_REJECTED, "status": "True"}, {"type": "Created", "status": "True"}]
    }
    put_condition(status, {"type": COND_CHILD_REJECTED, "status": "True", "reason": "x"}, COND_CHILD_REJECTED)
    assert [c["type"] for c in status["conditions"]] == ["Created", COND_CHILD_REJECTED]
    put_condition(status, None, COND_CHILD_REJECTED)
    assert [c["type"] for c in status["conditions"]] == ["Created"]


def test_a_hold_lasts_until_the_spec_changes_or_the_recheck_is_due() -> None:
    holds = Holds()
    assert holds.remaining("u", 1, 100.0) is None
    assert holds.hold("u", 1, 100.0) == RECHECK_SECONDS
    assert holds.remaining("u", 1, 160.0) == pytest.approx(RECHECK_SECONDS - 60)
    assert holds.remaining("u", 2, 160.0) is None  # a new generation: try again now
    assert holds.remaining("u", 2, 161.0) is None  # and it is forgotten

    holds.hold("v", 1, 100.0)
    assert holds.remaining("v", 1, 100.0 + RECHECK_SECONDS) is None


def test_holds_are_bounded() -> None:
    holds = Holds(capacity=2)
    for uid in ("a", "b", "c"):
        holds.hold(uid, 1, 0.0)
    assert holds.remaining("a", 1, 1.0) is None
    assert holds.remaining("c", 1, 1.0) is not None
