"""Find the control-plane binaries: KUBEBUILDER_ASSETS, then PATH, then the project's cached Go build.

The optional scheduler-plugins scheduler (gang scheduling with Coscheduling) is found the same way:
SCHEDULER_PLUGINS_BIN, then PATH, then hack/build-scheduler-plugins.sh; its PodGroup CRD is read from
SCHEDULER_PLUGINS_CRD or from the Go module cache (never copied into the repository).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

REQUIRED = ("etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler", "kubectl", "kwok")

_REPO_ROOT = Path(__file__).resolve().parents[2]
BUILD_SCRIPT = _REPO_ROOT / "hack" / "build-control-plane.sh"
SCHEDULER_PLUGINS_SCRIPT = _REPO_ROOT / "hack" / "build-scheduler-plugins.sh"
NODE_SCRIPT = _REPO_ROOT / "hack" / "build-node.sh"
NODE_BIN_ENV = "MPIOPERATOR_NODE_BIN"
SCHEDULER_PLUGINS_BINARY = "scheduler-plugins-scheduler"
SCHEDULER_PLUGINS_BIN_ENV = "SCHEDULER_PLUGINS_BIN"
SCHEDULER_PLUGINS_CRD_ENV = "SCHEDULER_PLUGINS_CRD"


class BinariesUnavailable(RuntimeError):
    """The control plane cannot be found or built; the message says what to install."""


@dataclass(frozen=True)
class Binaries:
    directory: Path

    def path(self, name: str) -> str:
        return str(self.directory / name)


def _holds_all(directory: Path) -> bool:
    return all(os.access(directory / name, os.X_OK) for name in REQUIRED)


def _from_path() -> Path | None:
    found = [shutil.which(name) for name in REQUIRED]
    if all(found):
        parents = {Path(p).parent for p in found if p}
        if len(parents) == 1:
            return parents.pop()
    return None


def find_binaries(*, build: bool = True) -> Binaries:
    """Return a directory holding every binary in REQUIRED, building them (once, cached) if needed.

    Progress of a cold build goes to stderr so that a 20-minute build never looks hung.
    """
    assets = os.environ.get("KUBEBUILDER_ASSETS")
    if assets and _holds_all(Path(assets)):
        return Binaries(Path(assets))
    on_path = _from_path()
    if on_path is not None:
        return Binaries(on_path)
    if not build:
        raise BinariesUnavailable("control-plane binaries not found; run hack/build-control-plane.sh")
    if not BUILD_SCRIPT.exists():
        raise BinariesUnavailable(f"control-plane binaries not found and {BUILD_SCRIPT} is missing")
    result = subprocess.run(
        ["bash", str(BUILD_SCRIPT)], stdout=subprocess.PIPE, stderr=sys.stderr, text=True, check=False
    )
    if result.returncode != 0:
        raise BinariesUnavailable(f"building the control plane failed (exit {result.returncode}); see above")
    directory = Path(result.stdout.strip().splitlines()[-1])
    if not _holds_all(directory):
        raise BinariesUnavailable(f"{directory} does not hold all of {', '.join(REQUIRED)}")
    return Binaries(directory)


def run_build_script(script: Path, *args: str, what: str) -> Path:
    """Run a hack/ script whose last stdout line is a path; its progress goes to our stderr."""
    if not script.exists():
        raise BinariesUnavailable(f"{what} not found and {script} is missing")
    result = subprocess.run(
        ["bash", str(script), *args], stdout=subprocess.PIPE, stderr=sys.stderr, text=True, check=False
    )
    lines = result.stdout.strip().splitlines()
    if result.returncode != 0 or not lines:
        command = " ".join([script.name, *args])
        raise BinariesUnavailable(f"{command} failed (exit {result.returncode}); see above")
    return Path(lines[-1])


def built_executable(env: str, script: Path, *, what: str, kind: str) -> Path:
    """$`env`, else the cached build of `script` (built if needed); either must be an executable `kind`."""
    explicit = os.environ.get(env)
    binary = Path(explicit) if explicit else run_build_script(script, what=what)
    if not os.access(binary, os.X_OK):
        raise BinariesUnavailable(f"{binary} is not an executable {kind}")
    return binary


def find_built_tool(binary: str, *, env: str, script: Path, build: bool = True) -> Path:
    """A tool one of the hack/ scripts builds: $ENV, then `binary` on PATH, then the script (built once)."""
    explicit = os.environ.get(env)
    if explicit:
        if not os.access(explicit, os.X_OK):
            raise BinariesUnavailable(f"{env}={explicit} is not an executable file")
        return Path(explicit)
    on_path = shutil.which(binary)
    if on_path:
        return Path(on_path)
    if not build:
        raise BinariesUnavailable(f"{binary} not found; run hack/{script.name} or set {env}")
    built = run_build_script(script, what=binary)
    if not os.access(built, os.X_OK):
        raise BinariesUnavailable(f"{script.name} printed {built}, not an executable")
    return built


def find_scheduler_plugins(*, build: bool = True) -> Path:
    """The scheduler-plugins scheduler (kube-scheduler 1.34 with Coscheduling), built once if needed."""
    return find_built_tool(
        SCHEDULER_PLUGINS_BINARY, env=SCHEDULER_PLUGINS_BIN_ENV, script=SCHEDULER_PLUGINS_SCRIPT, build=build
    )


def scheduler_plugins_crd() -> Path:
    """The PodGroup (scheduling.x-k8s.io) CRD shipped with the pinned scheduler-plugins module."""
    explicit = os.environ.get(SCHEDULER_PLUGINS_CRD_ENV)
    crd = (
        Path(explicit) if explicit else run_build_script(SCHEDULER_PLUGINS_SCRIPT, "crd", what="PodGroup CRD")
    )
    if not crd.is_file():
        raise BinariesUnavailable(f"PodGroup CRD {crd} is not a file")
    return crd


def find_node_binaries() -> Path:
    """The directory holding a real node's kubelet and CoreDNS (MPIOPERATOR_NODE_BIN, else built once)."""
    explicit = os.environ.get(NODE_BIN_ENV)
    directory = Path(explicit) if explicit else run_build_script(NODE_SCRIPT, what="kubelet and CoreDNS")
    for name in ("kubelet", "coredns"):
        if not os.access(directory / name, os.X_OK):
            raise BinariesUnavailable(f"{directory} holds no executable {name}")
    return directory
