"""The session-end check for leftover processes names only children that are still ours: a child that was
stopped, or that ended by itself, no longer counts, since the kernel may give its pid to anyone."""

from __future__ import annotations

from pathlib import Path

from mpioperator.testing.process import ManagedProcess, spawned_pids
from mpioperator.testing.wait import wait_for


def test_a_running_child_is_listed_until_it_is_stopped(tmp_path: Path) -> None:
    child = ManagedProcess("sleeper", ["sleep", "60"], tmp_path / "sleeper.log")
    child.start()
    pid = child.pid
    try:
        assert pid in spawned_pids()
    finally:
        child.stop()

    assert pid not in spawned_pids()


def test_a_child_that_ended_by_itself_is_not_listed(tmp_path: Path) -> None:
    child = ManagedProcess("quick", ["true"], tmp_path / "quick.log")
    child.start()
    pid = child.pid

    wait_for(lambda: pid not in spawned_pids(), timeout=10, what="the ended child is no longer listed")
    assert not child.running()
