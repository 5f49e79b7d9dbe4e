"""A fixed number of operator replicas behind the Lease, kept up: a replica killed by a test or exited on
its own is started again as a new process, with a new token (so the audit log tells the two apart).

Every process ever started is kept, for its log and its credential, and every end is recorded.

A process dies with the thread that started it (ManagedProcess sets the parent-death signal, which follows
the creating thread), so the pool must be driven from the test's main thread only: waiting for a leader
and `keep_up` also revive exited replicas, and nothing else needs to run in the background.
"""

from __future__ import annotations

import base64
import json
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import yaml

from mpioperator.testing.cluster import LocalCluster
from mpioperator.testing.operator import OperatorProcess
from mpioperator.testing.wait import wait_for

LEADERSHIP_LOST = "leader election lost"  # the operator's log line when it exits after losing the Lease
START_ATTEMPTS = 5


@dataclass(frozen=True, slots=True)
class Exit:
    name: str
    code: int | None
    killed: bool  # SIGKILLed by the test
    lost_leadership: bool  # its log says it exited because it lost the Lease


@dataclass(frozen=True, slots=True)
class Takeover:
    killed: str
    new_leader: str
    seconds: float


def token_credential(kubeconfig: Path) -> str:
    """The audit log's credential id of the ServiceAccount token in `kubeconfig`: `JTI=<the token's jti>`."""
    config = yaml.safe_load(kubeconfig.read_text())
    token = str(config["users"][0]["user"]["token"])
    payload = token.split(".")[1]
    claims = json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))
    return f"JTI={claims['jti']}"


class ReplicaPool:
    def __init__(
        self, cluster: LocalCluster, workdir: Path, *, args: Sequence[str] = (), slots: Sequence[str] = "ab"
    ) -> None:
        self._cluster = cluster
        self._workdir = workdir
        self._args = tuple(args)
        self._lock = threading.RLock()
        self._starts = 0
        self._paused = False
        self.current: dict[str, OperatorProcess] = {}
        self.every: list[OperatorProcess] = []
        self.exits: list[Exit] = []
        self._slots = tuple(slots)

    def start(self) -> None:
        with self._lock:
            for slot in self._slots:
                self._launch(slot)

    def _launch(self, slot: str) -> OperatorProcess:
        """A new process for `slot`; a start that fails (its process exits at once) is tried again."""
        for _ in range(START_ATTEMPTS):
            self._starts += 1
            name = f"replica-{slot}{self._starts}"
            proc = OperatorProcess(self._cluster, name=name, args=self._args, workdir=self._workdir / name)
            self.every.append(proc)
            try:
                proc.start()
            except Exception:
                self._record_exit(proc, killed=False)
                proc.kill()
                continue
            self.current[slot] = proc
            return proc
        raise RuntimeError(f"replica {slot} did not start in {START_ATTEMPTS} attempts")

    def _record_exit(self, proc: OperatorProcess, *, killed: bool) -> None:
        self.exits.append(
            Exit(proc.name, proc.returncode, killed, lost_leadership=LEADERSHIP_LOST in proc.log_text())
        )

    def pause(self) -> None:
        """Stop reviving exited replicas (while the API server is down a new one could not start)."""
        with self._lock:
            self._paused = True

    def resume(self) -> None:
        with self._lock:
            self._paused = False

    def revive_exited(self) -> list[str]:
        """Start a new process in every slot whose process has exited on its own; their names."""
        revived = []
        with self._lock:
            if self._paused:
                return []
            for slot, proc in list(self.current.items()):
                if proc.running:
                    continue
                self._record_exit(proc, killed=False)
                revived.append(self._launch(slot).name)
        return revived

    def keep_up(self, seconds: float, interval: float = 0.5) -> None:
        """Spend `seconds` reviving replicas that exit: the pause between two faults."""
        deadline = time.monotonic() + seconds
        while True:
            self.revive_exited()
            left = deadline - time.monotonic()
            if left <= 0:
                return
            time.sleep(min(interval, left))

    def _revived_leaders(self) -> list[OperatorProcess]:
        self.revive_exited()
        return self.leaders()

    def leaders(self) -> list[OperatorProcess]:
        found = []
        with self._lock:
            candidates = list(self.current.values())
        for proc in candidates:
            try:
                if proc.running and proc.leading():
                    found.append(proc)
            except Exception:
                continue  # exited or not serving yet: not a leader
        return found

    def wait_leader(self, timeout: float = 120.0) -> OperatorProcess:
        """The one replica leading with synced caches, once there is exactly one."""
        return wait_for(
            self.leaders,
            timeout=timeout,
            interval=0.1,
            what="one leading replica",
            done=lambda f: len(f) == 1,
        )[0]

    def kill_leader(self, timeout: float = 120.0) -> Takeover:
        """SIGKILL the leader, start its slot again at once, and time until a replica leads again."""
        leader = self.wait_leader(timeout)
        with self._lock:
            slot = next(s for s, p in self.current.items() if p is leader)
            killed_at = time.monotonic()
            leader.kill()
            self._record_exit(leader, killed=True)
            self._launch(slot)
        successor = wait_for(
            self._revived_leaders,
            timeout=timeout,
            interval=0.1,
            what="another replica to lead",
            done=lambda f: len(f) == 1 and f[0] is not leader,
        )[0]
        return Takeover(leader.name, successor.name, round(time.monotonic() - killed_at, 1))

    def stop(self) -> dict[str, int | None]:
        """SIGTERM every running replica; their exit codes."""
        with self._lock:
            self._paused = True
            return {proc.name: proc.terminate() for proc in self.current.values()}

    def credentials(self) -> dict[str, str]:
        """Audit credential id -> replica process name, for every process that got as far as a token."""
        names = {}
        for proc in self.every:
            if proc.kubeconfig.exists():
                names[token_credential(proc.kubeconfig)] = proc.name
        return names

    def logs(self) -> dict[str, str]:
        return {proc.name: proc.log_text() for proc in self.every}
