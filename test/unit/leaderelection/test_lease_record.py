"""Lease records: who may take the lease, what gets written, and how a release looks."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from mpioperator.leaderelection.record import (
    LeaderRecord,
    held_by_other,
    lease_spec,
    new_lease,
    next_record,
    record_from_lease,
    released,
)

T0 = datetime(2026, 11, 22, 12, 0, 0, 123456, tzinfo=UTC)


def _record(holder: str = "a", transitions: int = 0) -> LeaderRecord:
    return LeaderRecord(holder, 15, T0, T0, transitions)


def test_spec_round_trips_with_microsecond_times() -> None:
    spec = lease_spec(_record())
    assert spec["renewTime"] == "2026-11-22T12:00:00.123456Z"
    assert record_from_lease({"spec": spec}) == _record()


def test_empty_lease_reads_as_unheld() -> None:
    assert record_from_lease({"spec": {}}) == LeaderRecord("", 0, None, None, 0)


def test_a_valid_lease_of_another_holder_blocks_us_until_it_expires_by_our_clock() -> None:
    other = _record("b")
    assert held_by_other(other, "a", observed_at=100.0, now=114.9)
    assert not held_by_other(other, "a", observed_at=100.0, now=115.1)


def test_our_own_or_an_empty_lease_never_blocks_us() -> None:
    assert not held_by_other(_record("a"), "a", observed_at=100.0, now=100.0)
    assert not held_by_other(_record(""), "a", observed_at=100.0, now=100.0)


def test_first_acquisition_starts_at_zero_transitions() -> None:
    record = next_record(None, "a", lease_duration=15, wall_now=T0)
    assert record == LeaderRecord("a", 15, T0, T0, 0)


def test_renewal_keeps_acquire_time_and_transitions() -> None:
    later = T0 + timedelta(seconds=3)
    renewed = next_record(_record("a", transitions=4), "a", lease_duration=15, wall_now=later)
    assert renewed == LeaderRecord("a", 15, T0, later, 4)


def test_takeover_counts_a_transition() -> None:
    later = T0 + timedelta(seconds=30)
    taken = next_record(_record("b", transitions=4), "a", lease_duration=15, wall_now=later)
    assert taken == LeaderRecord("a", 15, later, later, 5)


def test_release_empties_the_holder_and_shortens_the_lease() -> None:
    later = T0 + timedelta(seconds=1)
    gone = released(_record("a", transitions=2), later)
    assert gone.holder == ""
    assert gone.lease_duration_seconds == 1
    assert gone.transitions == 2


def test_new_lease_object() -> None:
    lease = new_lease("mpi-operator", "kubeflow", _record())
    assert lease["apiVersion"] == "coordination.k8s.io/v1"
    assert lease["metadata"] == {"name": "mpi-operator", "namespace": "kubeflow"}
    assert lease["spec"]["holderIdentity"] == "a"
