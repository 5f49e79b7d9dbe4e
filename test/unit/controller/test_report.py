"""A change of the pod counts, aggregate or tasks alone waits a little for a change that is written anyway."""

from __future__ import annotations

import pytest

from mpioperator.controller.report import COUNTS_SETTLE, CountsSettle

WRITTEN = {"phase": "Running", "podCounts": {"Launcher": {"running": 1}, "Worker": {"running": 2}}}
LAUNCHER_ENDED = {"phase": "Running", "podCounts": {"Launcher": {"succeeded": 1}, "Worker": {"running": 2}}}


def test_a_change_of_the_counts_alone_waits_then_is_written() -> None:
    settle = CountsSettle()
    assert settle.wait("u", WRITTEN, LAUNCHER_ENDED, 100.0) == COUNTS_SETTLE
    assert settle.wait("u", WRITTEN, LAUNCHER_ENDED, 101.0) == pytest.approx(COUNTS_SETTLE - 1)
    assert settle.wait("u", WRITTEN, LAUNCHER_ENDED, 100.0 + COUNTS_SETTLE) is None
    # Written: the next counts-only change waits from its own start.
    assert settle.wait("u", LAUNCHER_ENDED, WRITTEN, 200.0) == COUNTS_SETTLE


def test_any_other_change_writes_at_once_counts_included() -> None:
    settle = CountsSettle()
    assert settle.wait("u", WRITTEN, LAUNCHER_ENDED, 100.0) == COUNTS_SETTLE
    succeeded = {**LAUNCHER_ENDED, "phase": "Succeeded"}
    assert settle.wait("u", WRITTEN, succeeded, 100.5) is None
    assert settle.wait("u", WRITTEN, LAUNCHER_ENDED, 100.6) == COUNTS_SETTLE  # forgotten once written


def test_first_counts_and_unchanged_counts_never_wait() -> None:
    settle = CountsSettle()
    assert settle.wait("u", {"phase": "Pending"}, WRITTEN, 100.0) is None
    assert settle.wait("u", WRITTEN, dict(WRITTEN), 100.0) is None


@pytest.mark.parametrize(
    "field",
    [
        ("aggregate", {"running": 2, "deleted": 1}),
        ("tasks", [{"type": "Worker", "restartCount": 0, "pods": []}]),
    ],
)
def test_a_change_of_the_aggregate_or_the_tasks_alone_waits_as_the_counts_do(
    field: tuple[str, object],
) -> None:
    key, value = field
    settle = CountsSettle()
    assert settle.wait("u", WRITTEN, {**WRITTEN, key: value}, 100.0) == COUNTS_SETTLE
    assert settle.wait("u", WRITTEN, {**WRITTEN, key: value, "phase": "Unknown"}, 100.5) is None
