"""The local image registry (CNCF distribution) that the real node's containerd pulls from.

It listens on loopback only and stores blobs on the file system in a directory the caller owns, so a
persistent directory keeps pushed images between runs.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from pathlib import Path

from mpioperator.testing.binaries import find_built_tool
from mpioperator.testing.free_ports import free_port, start_on_free_ports
from mpioperator.testing.http_probe import answers_ok
from mpioperator.testing.process import ManagedProcess
from mpioperator.testing.wait import ProbeAborted, WaitTimeout, wait_for

_REPO_ROOT = Path(__file__).resolve().parents[2]
BUILD_SCRIPT = _REPO_ROOT / "hack" / "build-registry.sh"
REGISTRY_BIN_ENV = "REGISTRY_BIN"
REGISTRY_BINARY = "registry"


def find_registry(*, build: bool = True) -> Path:
    """REGISTRY_BIN, then `registry` on PATH, then hack/build-registry.sh (built once, cached)."""
    return find_built_tool(REGISTRY_BINARY, env=REGISTRY_BIN_ENV, script=BUILD_SCRIPT, build=build)


def registry_config(storage: Path, port: int) -> dict[str, object]:
    """distribution's configuration (YAML; JSON is YAML): loopback, file-system storage, quiet logs."""
    return {
        "version": 0.1,
        "log": {"level": "warn", "accesslog": {"disabled": True}},
        "storage": {
            "filesystem": {"rootdirectory": str(storage)},
            "delete": {"enabled": True},
            # Uploads interrupted by a killed run are cleaned by the next start, not on a timer.
            "maintenance": {"uploadpurging": {"enabled": False}},
        },
        "http": {"addr": f"127.0.0.1:{port}"},
    }


class LocalRegistry:
    """`start()` runs the registry on a free loopback port and returns once `GET /v2/` answers."""

    def __init__(self, storage: Path, *, work_dir: Path | None = None, binary: Path | None = None):
        self.storage = storage
        self._work_dir = work_dir
        self._own_work_dir = False
        self._binary = binary
        self._process: ManagedProcess | None = None
        self._port: int | None = None

    @property
    def address(self) -> str:
        if self._port is None:
            raise RuntimeError("the registry is not started")
        return f"127.0.0.1:{self._port}"

    @property
    def pid(self) -> int | None:
        return self._process.pid if self._process else None

    def start(self, timeout: float = 30.0) -> None:
        binary = self._binary or find_registry()
        self.storage.mkdir(parents=True, exist_ok=True)
        if self._work_dir is None:
            self._work_dir = Path(tempfile.mkdtemp(prefix="mpioperator-registry-"))
            self._own_work_dir = True
        self._work_dir.mkdir(parents=True, exist_ok=True)
        try:
            start_on_free_ports(lambda: self._start_once(binary, timeout))
        except ProbeAborted as exc:
            raise RuntimeError(f"the registry exited at start:\n{exc}") from None

    def _start_once(self, binary: Path, timeout: float) -> None:
        assert self._work_dir is not None
        self._port = free_port()
        config = self._work_dir / "config.yml"
        config.write_text(json.dumps(registry_config(self.storage, self._port), indent=1))
        env = {**os.environ, "OTEL_TRACES_EXPORTER": "none"}
        process = ManagedProcess(
            "registry", [str(binary), "serve", str(config)], self._work_dir / "registry.log", env
        )
        process.start()
        self._process = process
        try:
            wait_for(self._answers, timeout=timeout, what=f"registry on {self.address} answering GET /v2/")
        except WaitTimeout:
            process.stop()
            self._process = None
            raise RuntimeError(f"the registry did not answer within {timeout} s:\n{process.tail()}") from None
        except ProbeAborted:
            process.stop()
            self._process = None
            raise ProbeAborted(process.tail()) from None

    def _answers(self) -> bool:
        process = self._process
        if process is None or not process.running():
            raise ProbeAborted("registry exited")
        return answers_ok(f"http://{self.address}/v2/")

    def stop(self) -> None:
        if self._process is not None:
            self._process.stop()
            self._process = None
        if self._own_work_dir and self._work_dir is not None:
            shutil.rmtree(self._work_dir, ignore_errors=True)
            self._work_dir = None
            self._own_work_dir = False

    def log_tail(self, lines: int = 40) -> str:
        return self._process.tail(lines) if self._process else ""
