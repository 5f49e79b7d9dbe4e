"""The builds hack/test.sh starts in the background, so the first tiers run while a cold machine compiles
and downloads: the images of the real tier (hack/build-images.sh) and the tools beside the control plane
(hack/build-tools.sh: Helm, Prometheus, the gang schedulers, Kueue). The tests that need one wait here for
it to finish, and fail with its log's tail if it failed.

hack/test.sh exports one variable per build naming a directory where the build writes `log` as it goes and
`status` (its exit code) at the end; the tool build also writes `env`, a `NAME=path` line per tool built.
Without the variable there is nothing to wait for: the tools are then found or built where they are used.
"""

from __future__ import annotations

import os
from collections.abc import Collection
from dataclasses import dataclass
from pathlib import Path

from mpioperator.testing.wait import wait_for

# A cold build on a loaded 2-core machine, with room to spare.
TIMEOUT = 3600.0


class BackgroundBuildFailed(RuntimeError):
    pass


@dataclass(frozen=True)
class BackgroundBuild:
    env: str
    what: str
    script: str

    def wait(self, timeout: float = TIMEOUT) -> Path | None:
        """The build's directory once it succeeded (None when none runs); raises with its log's tail if it
        failed, WaitTimeout if it has not ended within `timeout` seconds."""
        value = os.environ.get(self.env)
        if not value:
            return None
        directory = Path(value)
        status = wait_for(
            lambda: _status(directory),
            timeout=timeout,
            interval=2.0,
            what=f"the {self.what} ({directory}/log)",
        )
        if status != "0":
            raise self.failed(directory, status)
        return directory

    def failed(self, directory: Path, status: str) -> BackgroundBuildFailed:
        return BackgroundBuildFailed(
            f"the background {self.what} ({self.script}) failed with exit {status}; "
            f"the end of {directory}/log:\n{log_tail(directory)}"
        )


IMAGES = BackgroundBuild("MPIOPERATOR_IMAGES_BUILD", "image build", "hack/build-images.sh")
TOOLS = BackgroundBuild("MPIOPERATOR_TOOLS_BUILD", "tool build", "hack/build-tools.sh")


def _status(directory: Path) -> str:
    path = directory / "status"
    return path.read_text().strip() if path.exists() else ""


def log_tail(directory: Path, lines: int = 40) -> str:
    log = directory / "log"
    text = log.read_text(errors="replace") if log.exists() else "(no log)"
    return "\n".join(text.splitlines()[-lines:])


def built_tools(directory: Path) -> dict[str, str]:
    """The tools the tool build has finished so far, by variable name."""
    env = directory / "env"
    lines = env.read_text().splitlines() if env.exists() else []
    return {name: path for name, _, path in (line.partition("=") for line in lines) if name and path}


def tools_pending(wanted: Collection[str] | None = None) -> bool:
    """Whether a tool build runs that has not yet built `wanted` (every tool when None)."""
    value = os.environ.get(TOOLS.env)
    if not value:
        return False
    directory = Path(value)
    return not _status(directory) and not (
        wanted is not None and set(wanted) <= built_tools(directory).keys()
    )


def export_built_tools(wanted: Collection[str] | None = None, timeout: float = TIMEOUT) -> dict[str, str]:
    """Waits until the tool build has built `wanted` (every tool when None, the whole build) and puts each
    finished tool's path into this process's environment, where mpioperator.testing.binaries looks first;
    a variable the caller set already is kept. Raises with the log's tail if the build failed first."""
    value = os.environ.get(TOOLS.env)
    if not value:
        return {}
    directory = Path(value)
    tools = ", ".join(wanted) if wanted is not None else "every tool"
    wait_for(
        lambda: not tools_pending(wanted),
        timeout=timeout,
        interval=2.0,
        what=f"the {TOOLS.what} to make {tools} ({directory}/log)",
    )
    built = built_tools(directory)
    status = _status(directory)
    if status not in ("", "0") and (wanted is None or not set(wanted) <= built.keys()):
        raise TOOLS.failed(directory, status)
    taken = {}
    for name, path in built.items():
        if not os.environ.get(name):
            os.environ[name] = path
            taken[name] = path
    return taken
