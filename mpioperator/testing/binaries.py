"""Find the control-plane binaries: KUBEBUILDER_ASSETS, then PATH, then the project's cached Go build."""

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
