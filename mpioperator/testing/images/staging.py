"""Contexts that hold files the repository does not: an image built around a binary the project builds
(the kubectl of the control plane) gets a context under the cache dir, made of its directory's files
and the staged binaries. Other images build from their directory as it is."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

from mpioperator.testing.binaries import find_binaries
from mpioperator.testing.cachedir import cache_dir
from mpioperator.testing.images.catalog import Image


def contexts_root() -> Path:
    return cache_dir() / "images" / "contexts"


def build_context(image: Image) -> Path:
    """Where `image` is built from: its directory, or a staged copy with its binaries added."""
    if not image.staged:
        return image.context_path
    target = contexts_root() / re.sub(r"[^A-Za-z0-9_.-]", "_", image.name)
    target.mkdir(parents=True, exist_ok=True)
    sources = {
        path.relative_to(image.context_path).as_posix(): path
        for path in image.context_path.rglob("*")
        if path.is_file() and path.name not in image.staged
    }
    binaries = find_binaries()
    sources.update({name: Path(binaries.path(binary)) for name, binary in image.staged.items()})
    for relative, source in sources.items():
        _copy_if_changed(source, target / relative)
    return target


def _copy_if_changed(source: Path, destination: Path) -> None:
    # Size and mtime, as rsync decides: a 60 MB binary is not read again on every build.
    if destination.exists():
        have, want = destination.stat(), source.stat()
        same_mode = have.st_mode == want.st_mode
        if same_mode and (have.st_size, int(have.st_mtime)) == (want.st_size, int(want.st_mtime)):
            return
    destination.parent.mkdir(parents=True, exist_ok=True)
    shutil.copy2(source, destination)
