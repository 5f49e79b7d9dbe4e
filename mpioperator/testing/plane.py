"""What a part started beside the local control plane (a real node, Volcano's scheduler) may use of it.

Those parts are started by `cluster.LocalCluster` and see it only through this protocol, so they never
import the module that imports them (`.importlinter` keeps it so).
"""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Protocol

from mpioperator.testing.process import ManagedProcess
from mpioperator.testing.rest import RestClient


class ControlPlane(Protocol):
    api_port: int

    @property
    def server(self) -> str: ...

    @property
    def kubeconfig(self) -> Path: ...

    @property
    def ca_file(self) -> Path: ...

    @property
    def rest(self) -> RestClient: ...

    def kubectl(
        self, *args: str, input: str | None = None, check: bool = True
    ) -> subprocess.CompletedProcess[str]: ...

    def spawn_component(
        self, name: str, argv: list[str], *, log_path: Path | None = None
    ) -> ManagedProcess: ...

    def require_running(self, proc: ManagedProcess) -> None: ...
