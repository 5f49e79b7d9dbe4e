"""A process that lost its picked port is started again; any other early exit is reported at once."""

from __future__ import annotations

import pytest

from mpioperator.testing.free_ports import free_ports, port_in_use, start_on_free_ports
from mpioperator.testing.wait import ProbeAborted


def test_a_lost_race_is_retried_until_a_start_succeeds() -> None:
    calls: list[int] = []

    def start_once() -> str:
        calls.append(1)
        if len(calls) == 1:
            raise ProbeAborted("bind: address already in use")
        return "up"

    assert start_on_free_ports(start_once, lost_race=lambda exc: "in use" in str(exc)) == "up"
    assert len(calls) == 2


def test_an_exit_for_another_reason_is_not_retried() -> None:
    calls: list[int] = []

    def start_once() -> None:
        calls.append(1)
        raise ProbeAborted("bad flag")

    with pytest.raises(ProbeAborted, match="bad flag"):
        start_on_free_ports(start_once, lost_race=lambda exc: "in use" in str(exc))
    assert len(calls) == 1


def test_the_last_attempt_s_exit_is_raised() -> None:
    calls: list[int] = []

    def start_once() -> None:
        calls.append(1)
        raise ProbeAborted(f"attempt {len(calls)}: address already in use")

    with pytest.raises(ProbeAborted, match="attempt 3"):
        start_on_free_ports(start_once, attempts=3)
    assert len(calls) == 3


def test_ports_picked_together_are_all_distinct_and_free() -> None:
    # A thousand from one range: picked one at a time and released, some would repeat.
    ports = free_ports(1000)
    assert len(set(ports)) == 1000
    assert not any(port_in_use(port) for port in ports[:20])
