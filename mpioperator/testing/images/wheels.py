"""MPI implementations from PyPI wheels (Intel MPI's impi-rt/impi-devel, MPICH's mpich): downloaded once
into the cache by the host's pip, then unpacked straight into an image tree (no pip inside the image)."""

from __future__ import annotations

import hashlib
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

from mpioperator.testing.images.workspace import BuildEnv

PLATFORM = "manylinux_2_28_x86_64"


def pypi_wheels(env: BuildEnv, name: str, projects: tuple[str, ...], version: str) -> list[Path]:
    """One wheel per project at `version`, cached under wheels/<name>-<version>/."""
    directory = env.cache / "wheels" / f"{name}-{version}"
    wheels = sorted(directory.glob("*.whl"))
    if len(wheels) == len(projects):
        return wheels
    directory.mkdir(parents=True, exist_ok=True)
    requirements = [f"{project}=={version}" for project in projects]
    env.say(f"downloading {' '.join(requirements)} from PyPI")
    command = [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:"]
    command += ["--dest", str(directory), "--platform", PLATFORM, *requirements]
    with open(env.log, "a") as log:
        result = subprocess.run(command, stdout=log, stderr=subprocess.STDOUT, check=False)
    wheels = sorted(directory.glob("*.whl"))
    if result.returncode != 0 or len(wheels) != len(projects):
        raise RuntimeError(f"pip download of {' '.join(requirements)} failed; see {env.log}")
    return wheels


def install_wheel_data(wheel: Path, prefix: Path) -> None:
    """Unpack a wheel's `*.data/data/` tree (what pip installs under the environment's prefix)."""
    with zipfile.ZipFile(wheel) as archive:
        for info in archive.infolist():
            _, marker, relative = info.filename.partition(".data/data/")
            if not marker or info.is_dir():
                continue
            target = prefix / relative
            target.parent.mkdir(parents=True, exist_ok=True)
            with archive.open(info) as source, open(target, "wb") as sink:
                shutil.copyfileobj(source, sink, 1 << 20)
            mode = (info.external_attr >> 16) & 0o777
            target.chmod(0o755 if mode & 0o111 else 0o644)


def link_duplicates(directory: Path) -> int:
    """Wheels cannot hold symlinks, so libmpi.so, .so.12 and .so.12.0.0 are three copies: keep the
    longest name and point the others at it. Returns the number of files replaced."""
    by_content: dict[tuple[int, str], list[Path]] = {}
    for path in sorted(directory.iterdir()):
        if path.is_file() and not path.is_symlink():
            digest = hashlib.sha256(path.read_bytes()).hexdigest()
            by_content.setdefault((path.stat().st_size, digest), []).append(path)
    replaced = 0
    for paths in by_content.values():
        keep = max(paths, key=lambda p: (len(p.name), p.name))
        for path in paths:
            if path != keep:
                path.unlink()
                path.symlink_to(keep.name)
                replaced += 1
    return replaced
