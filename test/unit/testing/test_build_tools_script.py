"""hack/build-tools.sh, run with stand-in build scripts: each tool's line appears as soon as it is built,
and a failing build ends the run with its exit code written where the tests look for it."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
SCRIPTS = (
    "build-helm.sh",
    "build-prometheus.sh",
    "build-scheduler-plugins.sh",
    "build-volcano-scheduler.sh",
    "build-kueue.sh",
)


def stand_in_hack(tmp_path: Path, failing: str | None = None) -> Path:
    hack = tmp_path / "hack"
    hack.mkdir()
    shutil.copy(ROOT / "hack" / "build-tools.sh", hack)
    for script in SCRIPTS:
        body = f"echo '{script} broke' >&2; exit 3" if script == failing else f"echo /cache/{script}"
        (hack / script).write_text(f"#!/usr/bin/env bash\n{body}\n")
    return hack


def run(hack: Path, out: Path) -> int:
    return subprocess.run(["bash", str(hack / "build-tools.sh"), str(out)], check=False).returncode


def test_every_tool_is_written_in_order_and_the_status_says_zero(tmp_path: Path) -> None:
    out = tmp_path / "out"
    assert run(stand_in_hack(tmp_path), out) == 0
    assert (out / "env").read_text().splitlines() == [
        "HELM_BIN=/cache/build-helm.sh",
        "PROMETHEUS_BIN=/cache/build-prometheus.sh",
        "SCHEDULER_PLUGINS_BIN=/cache/build-scheduler-plugins.sh",
        "VOLCANO_SCHEDULER_BIN=/cache/build-volcano-scheduler.sh",
        "KUEUE_BIN=/cache/build-kueue.sh",
    ]
    assert (out / "status").read_text() == "0\n"


def test_a_failed_build_stops_the_run_keeps_the_tools_built_before_and_logs_why(tmp_path: Path) -> None:
    out = tmp_path / "out"
    assert run(stand_in_hack(tmp_path, failing="build-scheduler-plugins.sh"), out) == 3
    assert (out / "env").read_text().splitlines() == [
        "HELM_BIN=/cache/build-helm.sh",
        "PROMETHEUS_BIN=/cache/build-prometheus.sh",
    ]
    assert (out / "status").read_text() == "3\n"
    log = (out / "log").read_text()
    assert "build-scheduler-plugins.sh broke" in log
    assert "hack/build-scheduler-plugins.sh failed with exit 3" in log
