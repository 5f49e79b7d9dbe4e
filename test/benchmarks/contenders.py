"""The two operators the side-by-side benchmark runs, behind one small interface.

Both run as local processes with the same ServiceAccount token, the same QPS, burst and worker count, and
are measured the same way: CPU and memory from /proc, readiness from what each one exposes.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import re
import socket
import subprocess
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from mpioperator.testing.cluster import LocalCluster
from mpioperator.testing.free_ports import free_port
from mpioperator.testing.images.versions import pinned
from mpioperator.testing.install import OPERATOR_ACCOUNT, OPERATOR_NAMESPACE, REPO
from mpioperator.testing.operator import OperatorProcess, service_account_token
from mpioperator.testing.pki import write_kubeconfig
from mpioperator.testing.process import ManagedProcess
from mpioperator.testing.wait import ProbeAborted, wait_for

# Upstream serves /healthz on a fixed port (a constant in its server.go), so only one can run at a time.
UPSTREAM_HEALTH_PORT = 8080


def ours_ready_at(log: str) -> float:
    """The epoch time of ours' ready line (JSON logs, "timestamp" in RFC 3339 UTC)."""
    for line in log.splitlines():
        if OURS_READY_LINE in line:
            stamp = str(json.loads(line)["timestamp"])
            return dt.datetime.fromisoformat(stamp).timestamp()
    raise ValueError("no ready line in the operator's log")


# klog's header: severity, MMDD, local time to the microsecond (no year, no zone).
_KLOG_TIME = re.compile(r"^[IWEF](\d\d)(\d\d) (\d\d):(\d\d):(\d\d)\.(\d{6})")


def klog_ready_at(log: str, *, year: int) -> float:
    """The epoch time of upstream's "Starting workers" line (klog, local time)."""
    for line in log.splitlines():
        if UPSTREAM_READY_LINE in line:
            match = _KLOG_TIME.match(line)
            if match:
                month, day, hour, minute, second, micros = (int(g) for g in match.groups())
                return dt.datetime(year, month, day, hour, minute, second, micros).timestamp()
    raise ValueError("no ready line in upstream's log")


@dataclass(frozen=True)
class Settings:
    """What both operators are given alike."""

    qps: int = 300
    burst: int = 600
    threadiness: int = 8


@dataclass(frozen=True)
class QueueLimits:
    """The work queue's token bucket (`--controller-queue-rate-limit`, `--controller-queue-burst`)."""

    rate: int
    burst: int

    def flags(self, dash: str) -> tuple[str, str]:
        return (
            f"{dash}controller-queue-rate-limit={self.rate}",
            f"{dash}controller-queue-burst={self.burst}",
        )


# What users get unless they change it: the same defaults in both operators.
DEFAULT_QUEUE = QueueLimits(rate=10, burst=100)
# Far above any event rate this cluster can deliver (a few thousand per second at the burst's peak), so
# the bucket never binds; what is left is each operator's own work per event.
RAISED_QUEUE = QueueLimits(rate=100_000, burst=100_000)
# What ours logs once it leads and its caches are synced (controller.run), as upstream's "Starting workers".
OURS_READY_LINE = "caches synced; starting workers"
UPSTREAM_READY_LINE = "Starting workers"


@dataclass(frozen=True)
class ProcStats:
    cpu_seconds: float
    rss_bytes: int
    peak_rss_bytes: int


def proc_stats(pid: int) -> ProcStats:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    cpu = (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    memory = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        key, _, value = line.partition(":")
        if key in ("VmRSS", "VmHWM"):
            memory[key] = int(value.split()[0]) * 1024
    return ProcStats(cpu, memory.get("VmRSS", 0), memory.get("VmHWM", 0))


class Contender(Protocol):
    name: str

    def start(self, cluster: LocalCluster, workdir: Path) -> None: ...

    def wait_ready(self, timeout: float) -> None:
        """Leading, caches synced, workers started."""
        ...

    def ready_at(self) -> float:
        """When (epoch seconds) the contender logged it was ready, by the log line's own timestamp: the
        poll that saw the line only knows it to a tenth of a second."""
        ...

    def stats(self) -> ProcStats: ...

    def alive(self) -> bool: ...

    def stop(self) -> None: ...

    def log_tail(self) -> str: ...


class Ours:
    name = "mpioperator"

    def __init__(
        self,
        settings: Settings,
        queue: QueueLimits = DEFAULT_QUEUE,
        extra_args: tuple[str, ...] = (),
        command: tuple[str, ...] | None = None,
    ) -> None:
        self.settings = settings
        self.queue = queue
        self.extra_args = extra_args
        self.command = command
        self._proc: OperatorProcess | None = None

    def start(self, cluster: LocalCluster, workdir: Path) -> None:
        args = (
            f"--lock-namespace={OPERATOR_NAMESPACE}",
            f"--threadiness={self.settings.threadiness}",
            f"--kube-api-qps={self.settings.qps}",
            f"--kube-api-burst={self.settings.burst}",
            *self.queue.flags("--"),
            *self.extra_args,
        )
        self._proc = OperatorProcess(cluster, args=args, workdir=workdir, command=self.command)
        self._proc.start()

    def wait_ready(self, timeout: float) -> None:
        # Timed by the log line, as upstream is: asking /readyz would also time how soon a busy event
        # loop answers a probe, once the syncs the start-up queued have begun.
        wait_for(self._workers_started, timeout=timeout, what="mpioperator to start its workers")

    def _workers_started(self) -> bool:
        proc = self._proc
        if proc is None or not proc.running:
            raise ProbeAborted(f"mpioperator exited:\n{self.log_tail()}")
        return OURS_READY_LINE in proc.log_text()

    def ready_at(self) -> float:
        assert self._proc is not None
        return ours_ready_at(self._proc.log_text())

    def stats(self) -> ProcStats:
        assert self._proc is not None and self._proc.pid is not None
        return proc_stats(self._proc.pid)

    def alive(self) -> bool:
        return self._proc is not None and self._proc.running

    def stop(self) -> None:
        if self._proc is not None:
            self._proc.terminate()

    def log_tail(self) -> str:
        return self._proc.log_tail() if self._proc else ""


def port_free(port: int) -> bool:
    """Whether a listener could bind the port on every address now, as upstream's does."""
    with socket.socket() as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind(("", port))
        except OSError:
            return False
        return True


def build_upstream() -> Path:
    """The upstream binary, built from its Go module on first use (cached by version afterwards)."""
    script = REPO / "hack" / "build-upstream-operator.sh"
    out = subprocess.run(["bash", str(script)], check=True, stdout=subprocess.PIPE, text=True).stdout
    return Path(out.strip().splitlines()[-1])


class Upstream:
    name = f"upstream {pinned('UPSTREAM_OPERATOR_VERSION')}"

    def __init__(self, settings: Settings, binary: Path, queue: QueueLimits = DEFAULT_QUEUE) -> None:
        self.settings = settings
        self.binary = binary
        self.queue = queue
        self._proc: ManagedProcess | None = None
        self._log: Path | None = None

    def start(self, cluster: LocalCluster, workdir: Path) -> None:
        workdir.mkdir(parents=True, exist_ok=True)
        kubeconfig = workdir / "kubeconfig"
        token = service_account_token(cluster, OPERATOR_NAMESPACE, OPERATOR_ACCOUNT)
        write_kubeconfig(kubeconfig, server=cluster.server, ca_file=cluster.ca_file, token=token)
        argv = [
            str(self.binary),
            f"-kubeConfig={kubeconfig}",
            f"-lock-namespace={OPERATOR_NAMESPACE}",
            f"-monitoring-port={free_port()}",
            f"-threadiness={self.settings.threadiness}",
            f"-kube-api-qps={self.settings.qps}",
            f"-kube-api-burst={self.settings.burst}",
            *self.queue.flags("-"),
        ]
        # Upstream lets $KUBECONFIG win over its flag; the benchmark's token must be the one used.
        env = {k: v for k, v in os.environ.items() if k != "KUBECONFIG"}
        self._log = workdir / "upstream.log"
        # Its health port is fixed: another benchmark's upstream on this machine may hold it for a while.
        wait_for(
            lambda: port_free(UPSTREAM_HEALTH_PORT),
            timeout=1800,
            interval=2.0,
            what=f"port {UPSTREAM_HEALTH_PORT} (upstream's health port) to be free",
        )
        self._proc = ManagedProcess("upstream-mpi-operator", argv, self._log, env=env)
        self._proc.start()
        wait_for(self._healthz, timeout=60, what="upstream /healthz", done=lambda code: code == 200)

    def _healthz(self) -> int:
        if self._proc is None or not self._proc.running():
            raise ProbeAborted(f"upstream operator exited:\n{self.log_tail()}")
        try:
            url = f"http://127.0.0.1:{UPSTREAM_HEALTH_PORT}/healthz"
            with urllib.request.urlopen(url, timeout=5) as answer:
                return int(answer.status)
        except urllib.error.HTTPError as exc:
            return int(exc.code)

    def _workers_started(self) -> bool:
        if self._proc is None or not self._proc.running():
            raise ProbeAborted(f"upstream operator exited:\n{self.log_tail()}")
        # Logged right after WaitForCacheSync returns (pkg/controller/mpi_job_controller.go).
        return self._log is not None and UPSTREAM_READY_LINE in self._log.read_text(errors="replace")

    def wait_ready(self, timeout: float) -> None:
        wait_for(self._workers_started, timeout=timeout, what="upstream to start its workers")

    def ready_at(self) -> float:
        assert self._log is not None
        return klog_ready_at(self._log.read_text(errors="replace"), year=time.localtime().tm_year)

    def stats(self) -> ProcStats:
        assert self._proc is not None and self._proc.pid is not None
        return proc_stats(self._proc.pid)

    def alive(self) -> bool:
        return self._proc is not None and self._proc.running()

    def stop(self) -> None:
        if self._proc is not None:
            self._proc.stop(timeout=15)

    def log_tail(self) -> str:
        return self._proc.tail(40) if self._proc else ""
