"""Child processes that cannot outlive the test run: own session, parent-death signal, logs in a file."""

from __future__ import annotations

import contextlib
import ctypes
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

_PR_SET_PDEATHSIG = 1

# Every child this process spawned, so a test session can prove that teardown left nothing behind.
_spawned: list[subprocess.Popen[bytes]] = []


def spawned_pids() -> list[int]:
    """The pids of spawned children not reaped yet. A reaped child's pid is free for the kernel to hand to
    any new process (pid_max is often 32768, and a long test run wraps it), so only these still name ours."""
    return [proc.pid for proc in _spawned if proc.poll() is None]


def _die_with_parent() -> None:
    # Runs in the child between fork and exec: the kernel SIGKILLs the child when our process dies,
    # so even a SIGKILLed pytest leaves no etcd or apiserver behind.
    libc = ctypes.CDLL("libc.so.6", use_errno=True)
    libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)


class ManagedProcess:
    """One control-plane component; its output goes to `log_path`, whose tail explains failures."""

    def __init__(self, name: str, argv: Sequence[str], log_path: Path, env: dict[str, str] | None = None):
        self.name = name
        self.argv = list(argv)
        self.log_path = log_path
        self.env = env
        self._proc: subprocess.Popen[bytes] | None = None
        self.last_returncode: int | None = None

    @property
    def pid(self) -> int | None:
        return self._proc.pid if self._proc else None

    def start(self) -> None:
        log = open(self.log_path, "ab")  # noqa: SIM115 - the child owns the descriptor after fork
        try:
            self._proc = subprocess.Popen(
                self.argv,
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                start_new_session=True,
                preexec_fn=_die_with_parent,
                env=self.env,
            )
        finally:
            log.close()
        _spawned.append(self._proc)

    def running(self) -> bool:
        return self._proc is not None and self._proc.poll() is None

    def returncode(self) -> int | None:
        return self._proc.poll() if self._proc else None

    def stop(self, timeout: float = 10.0) -> None:
        """SIGTERM, wait, then SIGKILL the whole process group; reaps the child."""
        proc = self._proc
        if proc is None:
            return
        if proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGTERM)
            try:
                proc.wait(timeout)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
        self.last_returncode = proc.returncode
        self._proc = None

    def kill(self) -> None:
        """SIGKILL without grace, as a crash would."""
        proc = self._proc
        if proc is not None and proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
        if proc is not None:
            self.last_returncode = proc.returncode
        self._proc = None

    def tail(self, lines: int = 40) -> str:
        try:
            content = self.log_path.read_text(errors="replace").splitlines()
        except FileNotFoundError:
            return ""
        return "\n".join(content[-lines:])


def pid_alive(pid: int) -> bool:
    """True while any thread of the process still runs.

    A zombie still answers kill(0), and in a multi-threaded (Go) process the group leader can already be a
    zombie while other threads are exiting and still hold its sockets; so every thread is checked.
    """
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        stats = list(Path(f"/proc/{pid}/task").glob("*/stat"))
    except FileNotFoundError:
        # Reaped between kill(0) and the look at its threads: gone, which is an answer, not an error.
        return False
    for stat in stats:
        try:
            state = stat.read_text().rsplit(")", 1)[-1].split()[0]
        except (OSError, IndexError):
            continue
        if state not in ("Z", "X"):
            return True
    return False


def wait_pids_gone(
    pids: Sequence[int], timeout: float = 10.0, *, is_alive: Callable[[int], bool] = pid_alive
) -> list[int]:
    """Return the pids still alive (by `is_alive`) after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    alive = [p for p in pids if is_alive(p)]
    while alive and time.monotonic() < deadline:
        time.sleep(0.05)
        alive = [p for p in alive if is_alive(p)]
    return alive


def run_owner_then_kill(script: str) -> dict[str, Any]:
    """Run `script` in a new Python process until it prints one JSON line (what it started), then SIGKILL
    it, as a crash would, and return that line: teardown tests check what its components left behind."""
    owner = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
    try:
        assert owner.stdout is not None
        started: dict[str, Any] = json.loads(owner.stdout.readline())
    finally:
        owner.send_signal(signal.SIGKILL)
        owner.wait()
    return started
