"""Manifests and examples applied with the real kubectl to a real API server."""

from __future__ import annotations

import subprocess
from pathlib import Path

REPO = Path(__file__).resolve().parents[3]
OVERLAYS = ("kubeflow", "standalone", "dev")
EXAMPLES = sorted((REPO / "examples" / "v2beta1").rglob("*.yaml"))


def stderr_of(result: subprocess.CompletedProcess[str]) -> str:
    return result.stderr + result.stdout
