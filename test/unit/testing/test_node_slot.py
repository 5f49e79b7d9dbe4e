"""The real node's slot is one lock per bridge, counted per process: a test can hold it around a node's
whole life while the node takes it inside, and it is free for others only after the last release."""

from __future__ import annotations

import fcntl
from pathlib import Path

import pytest

from mpioperator.testing.node import slot


def taken_by_someone(path: Path) -> bool:
    """Whether another open file description (what another process would have) is refused the lock."""
    with open(path, "a+") as other:
        try:
            fcntl.flock(other, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return True
        fcntl.flock(other, fcntl.LOCK_UN)
        return False


def test_the_slot_stays_taken_until_the_outer_holder_lets_go(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(slot, "LOCK_DIR", tmp_path)
    lock = tmp_path / "mpioperator-test0.lock"
    with slot.holding("mpioperator-test0"):
        slot.acquire("mpioperator-test0")  # the node, inside the test's hold
        assert taken_by_someone(lock)
        slot.release("mpioperator-test0")  # the node stopped
        assert taken_by_someone(lock), "a run waiting for the bridge could start its node now"
    assert not taken_by_someone(lock)


def test_a_slot_held_elsewhere_times_out_naming_its_owner(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(slot, "LOCK_DIR", tmp_path)
    lock = tmp_path / "mpioperator-test1.lock"
    with open(lock, "a+") as other:
        fcntl.flock(other, fcntl.LOCK_EX | fcntl.LOCK_NB)
        other.write("4242")
        other.flush()
        with pytest.raises(slot.SlotBusy, match="owner pid 4242"):
            slot.acquire("mpioperator-test1", timeout=0)
