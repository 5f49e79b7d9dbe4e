"""Wheels for the images whose pip installs are gigabytes (torch and its CUDA runtime wheels): downloaded
once on the host into the cache, kept between runs, and handed to the build so its pip installs offline.

The directory is flat, so each file is keyed by the name and version in its file name, and an image that
pins the same torch as another finds its wheels there. A requirements file's wheels are fetched once: a
marker named after its digest says they are all there, so a warm build never asks the index.

The Dockerfiles stay as a user runs them (`pip install -r requirements.txt`, from PyPI); only the build
here mounts the wheels at /wheels and a pip.conf that says `no-index` and `find-links = /wheels`.
"""

from __future__ import annotations

import hashlib
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

from mpioperator.testing.cachedir import cache_dir

MOUNT = "/wheels"
PIP_CONF_TARGET = "/etc/pip.conf"
# The images' Python: Debian bookworm's python3. The host's pip fetches wheels for its own interpreter.
IMAGE_PYTHON = (3, 11)


def wheels_dir() -> Path:
    return cache_dir() / "wheels"


def _marker(requirements: Path) -> Path:
    digest = hashlib.sha256(requirements.read_bytes()).hexdigest()[:16]
    return wheels_dir() / ".complete" / f"{requirements.stem}-{digest}"


def have_wheels(requirements: Path) -> bool:
    return _marker(requirements).exists()


def download_command(requirements: Path) -> list[str]:
    # --no-deps: the requirements files pin every package the image installs, and pip install --no-deps
    # there installs exactly those; pip download would otherwise add what torch's metadata asks for.
    return [
        sys.executable,
        "-m",
        "pip",
        "download",
        "--no-deps",
        "-d",
        str(wheels_dir()),
        "-r",
        str(requirements),
    ]


def ensure_wheels(requirements: Path, log: Path) -> None:
    """Downloads what `requirements` pins into the wheels directory, unless a run already did."""
    if have_wheels(requirements):
        return
    if sys.version_info[:2] != IMAGE_PYTHON:
        wanted = ".".join(map(str, IMAGE_PYTHON))
        raise RuntimeError(
            f"the images' wheels are fetched by the host's pip for Python {wanted}, not {sys.version}"
        )
    wheels_dir().mkdir(parents=True, exist_ok=True)
    command = download_command(requirements)
    with open(log, "a") as handle:
        handle.write(f"$ {' '.join(command)}\n")
        handle.flush()
        result = subprocess.run(command, stdout=handle, stderr=subprocess.STDOUT, check=False)
    if result.returncode != 0:
        raise RuntimeError(
            f"downloading the wheels of {requirements} failed (exit {result.returncode}), see {log}"
        )
    marker = _marker(requirements)
    marker.parent.mkdir(parents=True, exist_ok=True)
    marker.write_text(requirements.read_text())


def offline_volumes(volumes: Sequence[str], scratch: Path) -> list[str]:
    """The build's volumes with the wheels mounted and the pip.conf turned offline: the same settings (the
    host's CA) plus `no-index` and `find-links`, written to `scratch`."""
    out: list[str] = []
    conf_text = "[global]\n"
    for volume in volumes:
        source, _, rest = volume.partition(":")
        if rest.split(":")[0] == PIP_CONF_TARGET:
            conf_text = Path(source).read_text()
        else:
            out.append(volume)
    offline = scratch / "pip-offline.conf"
    offline.write_text(conf_text.rstrip("\n") + f"\nno-index = true\nfind-links = {MOUNT}\n")
    return [*out, f"{offline}:{PIP_CONF_TARGET}:ro", f"{wheels_dir()}:{MOUNT}:ro"]
