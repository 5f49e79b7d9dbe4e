"""The wheel users install holds the operator and the kubectl mpijob plugin without the test harness; PyYAML is
required for the plugin, which reads and prints job files. Built by pip from a copy of the
source tree, harness included, so what leaves it out is the packaging itself, not a missing directory."""

from __future__ import annotations

import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

from mpioperator.testing.images.versions import REPO_ROOT


def _build_wheel(tmp_path: Path) -> zipfile.ZipFile:
    source = tmp_path / "source"
    shutil.copytree(
        REPO_ROOT / "mpioperator", source / "mpioperator", ignore=shutil.ignore_patterns("__pycache__")
    )
    for name in ("setup.cfg", "pyproject.toml", "README.md"):
        shutil.copy2(REPO_ROOT / name, source / name)
    dist = tmp_path / "dist"
    built = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--quiet", "--wheel-dir", str(dist), str(source)],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert built.returncode == 0, built.stdout + built.stderr
    (wheel,) = dist.glob("mpioperator-*.whl")
    return zipfile.ZipFile(wheel)


def test_the_wheel_holds_the_operator_and_its_cli_without_the_test_harness(tmp_path: Path) -> None:
    assert (REPO_ROOT / "mpioperator" / "testing" / "cluster.py").is_file()
    with _build_wheel(tmp_path) as wheel:
        names = wheel.namelist()
        assert {"mpioperator/app/main.py", "mpioperator/controller/controller.py"} <= set(names)
        assert [name for name in names if name.startswith("mpioperator/testing")] == []
        (metadata,) = [name for name in names if name.endswith(".dist-info/METADATA")]
        requires = [
            line.partition(":")[2].strip()
            for line in wheel.read(metadata).decode().splitlines()
            if line.startswith("Requires-Dist:")
        ]
        (entry_points,) = [name for name in names if name.endswith(".dist-info/entry_points.txt")]
        scripts = wheel.read(entry_points).decode()
    assert [r for r in requires if r.lower().startswith("pyyaml")] == ["PyYAML<7,>=6.0"]
    assert "kubectl-mpijob = mpioperator.cli.main:entry" in scripts
    assert "mpi-operator = mpioperator.app.entry:main" in scripts
    assert "mpioperator.testing" not in scripts
