"""Whether a process still runs is asked of processes that are being killed: the kernel can reap one between
the signal check and the look at its threads, and that answers the question (gone) rather than failing it."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from mpioperator.testing.process import pid_alive


def test_a_running_process_is_alive_and_a_reaped_one_is_not() -> None:
    child = subprocess.Popen(["sleep", "60"])
    try:
        assert pid_alive(child.pid)
    finally:
        child.kill()
        child.wait()
    assert not pid_alive(child.pid)


def test_a_process_reaped_between_the_signal_check_and_the_thread_listing_is_gone(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    child = subprocess.Popen(["sleep", "60"])
    tasks = Path(f"/proc/{child.pid}/task")
    real_scandir = os.scandir

    def scandir(path: object) -> Iterator[os.DirEntry[str]]:
        if Path(str(path)) == tasks and child.returncode is None:
            child.kill()
            child.wait()
        return real_scandir(path)  # type: ignore[call-overload, no-any-return]

    monkeypatch.setattr(os, "scandir", scandir)
    try:
        assert not pid_alive(child.pid)
    finally:
        if child.returncode is None:
            child.kill()
            child.wait()
