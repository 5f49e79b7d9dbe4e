"""The PROGRESS column of `kubectl get mpijob -o wide` sampled while a job runs, for the real tests that
show progress moving (mpioperator.io/progress)."""

from __future__ import annotations

import threading
from types import TracebackType

from mpioperator.testing.cluster import LocalCluster


class ProgressColumn:
    """Samples `kubectl get mpijob <name> -o wide` once a second on a thread of its own, keeping each new
    PROGRESS value and the lines that showed it."""

    def __init__(self, cluster: LocalCluster, namespace: str, name: str) -> None:
        self._cluster, self._ns, self._name = cluster, namespace, name
        self.values: list[str] = []
        self.shown: list[str] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)

    def __enter__(self) -> ProgressColumn:
        self._thread.start()
        return self

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, tb: TracebackType | None
    ) -> None:
        self._stop.set()
        self._thread.join(timeout=30)

    def _sample(self) -> None:
        while not self._stop.wait(1.0):
            out = self._cluster.kubectl(
                "-n", self._ns, "get", "mpijob", self._name, "-o", "wide", check=False
            )
            lines = out.stdout.splitlines()
            if out.returncode != 0 or len(lines) < 2 or "PROGRESS" not in lines[0]:
                continue
            value = lines[1][lines[0].index("PROGRESS") :].strip()
            if value and (not self.values or self.values[-1] != value):
                self.values.append(value)
                self.shown.append(f"{lines[0]}\n{lines[1]}")
