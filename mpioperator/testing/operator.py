"""The operator as users run it: a separate process, authenticated as the manifests' ServiceAccount."""

from __future__ import annotations

import datetime as dt
import json
import os
import sys
import tempfile
import urllib.request
from pathlib import Path
from typing import TYPE_CHECKING

from mpioperator.testing.free_ports import free_ports
from mpioperator.testing.pki import write_kubeconfig
from mpioperator.testing.process import ManagedProcess
from mpioperator.testing.wait import wait_for

if TYPE_CHECKING:
    from mpioperator.testing.cluster import LocalCluster


def service_account_token(
    cluster: LocalCluster, namespace: str, name: str, *, seconds: int = 24 * 3600
) -> str:
    """A bound token for `namespace/name` from the TokenRequest API, as a pod would get one."""
    body = {
        "apiVersion": "authentication.k8s.io/v1",
        "kind": "TokenRequest",
        "spec": {"expirationSeconds": seconds},
    }
    answer = cluster.rest.create(f"/api/v1/namespaces/{namespace}/serviceaccounts/{name}/token", body)
    return str(answer["status"]["token"])


def operator_command() -> list[str]:
    script = Path(sys.executable).parent / "mpi-operator"
    if script.exists():
        return [str(script)]
    return [sys.executable, "-m", "mpioperator.app.main"]


class OperatorProcess:
    """`mpi-operator` with its own kubeconfig (a ServiceAccount token), health and metrics ports and log."""

    def __init__(
        self,
        cluster: LocalCluster,
        *,
        name: str = "mpi-operator",
        service_account: tuple[str, str] = ("mpi-operator", "mpi-operator"),
        args: tuple[str, ...] = (),
        workdir: Path | None = None,
        command: tuple[str, ...] | None = None,
    ) -> None:
        self.cluster = cluster
        self.name = name
        self.service_account = service_account
        self.args = args
        self.command = list(command) if command else operator_command()
        self.workdir = workdir or Path(tempfile.mkdtemp(prefix=f"{name}-"))
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.health_port, self.metrics_port = free_ports(2)
        self.kubeconfig = self.workdir / "kubeconfig"
        self._proc: ManagedProcess | None = None

    @property
    def log_path(self) -> Path:
        return self.workdir / f"{self.name}.log"

    @property
    def pid(self) -> int | None:
        return self._proc.pid if self._proc else None

    @property
    def running(self) -> bool:
        return self._proc is not None and self._proc.running()

    @property
    def returncode(self) -> int | None:
        return self._proc.returncode() if self._proc else None

    def exited(self) -> bool:
        return self._proc is not None and self._proc.returncode() is not None

    def start(self, timeout: float = 60.0) -> OperatorProcess:
        """Start the process; returns once /healthz answers 200 (within `timeout` seconds)."""
        namespace, account = self.service_account
        token = service_account_token(self.cluster, namespace, account)
        write_kubeconfig(
            self.kubeconfig, server=self.cluster.server, ca_file=self.cluster.ca_file, token=token
        )
        argv = [
            *self.command,
            f"--kubeConfig={self.kubeconfig}",
            f"--health-port={self.health_port}",
            f"--monitoring-port={self.metrics_port}",
            "--log-format=json",
            *self.args,
        ]
        env = {k: v for k, v in os.environ.items() if k != "KUBECONFIG"}
        self._proc = ManagedProcess(self.name, argv, self.log_path, env=env)
        self._proc.start()
        wait_for(self._healthz, timeout=timeout, what=f"{self.name} /healthz", done=lambda code: code == 200)
        return self

    def _get(self, port: int, path: str) -> tuple[int, str]:
        if self._proc is None or not self._proc.running():
            from mpioperator.testing.wait import ProbeAborted

            raise ProbeAborted(f"{self.name} exited with {self.returncode}:\n{self.log_tail()}")
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=5) as answer:
                return int(answer.status), answer.read().decode()
        except urllib.error.HTTPError as exc:
            return int(exc.code), exc.read().decode()

    def _healthz(self) -> int:
        return self._get(self.health_port, "/healthz")[0]

    def ready(self) -> bool:
        """/readyz: a standby is always ready; a leader once its caches are synced."""
        return self._get(self.health_port, "/readyz")[0] == 200

    def leading(self) -> bool:
        """This replica holds the lease and reconciles (its caches are synced)."""
        for line in self._get(self.metrics_port, "/metrics")[1].splitlines():
            if line.startswith("mpi_operator_is_leader "):
                return float(line.split()[1]) == 1.0 and self.ready()
        return False

    def wait_ready(self, timeout: float = 60.0) -> None:
        """Wait until this replica leads with synced caches."""
        wait_for(self.leading, timeout=timeout, what=f"{self.name} to lead with synced caches")

    def metrics(self) -> str:
        return self._get(self.metrics_port, "/metrics")[1]

    def terminate(self, timeout: float = 15.0) -> int | None:
        """SIGTERM and wait; the exit code (None if it was not running)."""
        if self._proc is None:
            return None
        proc = self._proc
        proc.stop(timeout=timeout)
        return proc.last_returncode

    def kill(self) -> None:
        if self._proc is not None:
            self._proc.kill()

    def cpu_seconds(self) -> float:
        """User + system CPU time the operator process has used so far."""
        if self.pid is None:
            return 0.0
        fields = Path(f"/proc/{self.pid}/stat").read_text().rsplit(")", 1)[1].split()
        ticks = os.sysconf("SC_CLK_TCK")
        return (int(fields[11]) + int(fields[12])) / ticks

    def peak_rss_bytes(self) -> int:
        if self.pid is None:
            return 0
        for line in Path(f"/proc/{self.pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
        return 0

    def log_tail(self, lines: int = 60) -> str:
        return self._proc.tail(lines) if self._proc else ""

    def log_text(self) -> str:
        return self.log_path.read_text(errors="replace") if self.log_path.exists() else ""

    def syncs_started_after(self, key: str, moment: dt.datetime) -> int:
        """How many syncs of the MPIJob `key` (`namespace/name`) began after `moment` (aware) and have
        ended without error. Read from the log, where each sync names its key and duration at -v=4:
        the per-key evidence that the operator has looked at a job again."""
        count = 0
        for line in self.log_text().splitlines():
            try:
                record = json.loads(line)
            except ValueError:
                continue
            if not isinstance(record, dict) or record.get("event") != "synced" or record.get("job") != key:
                continue
            ended = dt.datetime.fromisoformat(str(record["timestamp"]))
            if ended - dt.timedelta(seconds=float(record["seconds"])) > moment:
                count += 1
        return count
