"""The two gang schedulers' PodGroup CRDs, read from their own Go modules (never copied into the repo).

scheduler-plugins' comes from hack/build-scheduler-plugins.sh (see binaries.py). Volcano's API module
(volcano.sh/apis) holds only Go types, so the CRD is taken from the volcano.sh/volcano module, where
`config/crd/volcano/bases` holds the generated CRDs. `go mod download` is a no-op on a warm cache.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

from mpioperator.testing.binaries import BinariesUnavailable, scheduler_plugins_crd
from mpioperator.testing.images.versions import pinned

__all__ = ["VOLCANO_CRD_ENV", "VOLCANO_VERSION", "scheduler_plugins_crd", "volcano_crd"]

VOLCANO_MODULE = "volcano.sh/volcano"
# The oldest release the module proxy serves with a v1beta1 PodGroup CRD matching upstream's
# volcano.sh/apis v1.14.0 types.
VOLCANO_VERSION = pinned("VOLCANO_CRD_VERSION")
VOLCANO_CRD_ENV = "VOLCANO_CRD"
_CRD_IN_MODULE = Path("config/crd/volcano/bases/scheduling.volcano.sh_podgroups.yaml")


def volcano_crd() -> Path:
    """The PodGroup (scheduling.volcano.sh) CRD: $VOLCANO_CRD, else the one in the pinned Go module."""
    explicit = os.environ.get(VOLCANO_CRD_ENV)
    crd = Path(explicit) if explicit else module_dir(VOLCANO_MODULE, VOLCANO_VERSION) / _CRD_IN_MODULE
    if not crd.is_file():
        raise BinariesUnavailable(f"Volcano PodGroup CRD {crd} is not a file")
    return crd


def module_dir(module: str, version: str) -> Path:
    go = shutil.which("go")
    if go is None:
        raise BinariesUnavailable(f"Go is needed to fetch {module}@{version}, or set {VOLCANO_CRD_ENV}")
    result = subprocess.run(
        [go, "mod", "download", "-json", f"{module}@{version}"],
        capture_output=True,
        text=True,
        check=False,
        # Outside any main module, so the repository's own settings cannot interfere.
        cwd=Path.home(),
        env={**os.environ, "GOFLAGS": "-mod=mod"},
    )
    try:
        info = json.loads(result.stdout)
    except json.JSONDecodeError:
        info = {}
    if result.returncode != 0 or "Dir" not in info:
        reason = info.get("Error") or result.stderr.strip() or f"exit {result.returncode}"
        raise BinariesUnavailable(f"go mod download {module}@{version} failed: {reason}")
    return Path(info["Dir"])
