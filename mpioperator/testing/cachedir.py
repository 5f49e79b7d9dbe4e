"""Where built binaries, images and pushed registry blobs are kept between runs (outside git)."""

from __future__ import annotations

import os
from pathlib import Path


def cache_dir() -> Path:
    """$MPIOPERATOR_CACHE, else $XDG_CACHE_HOME/mpioperator, else ~/.cache/mpioperator (as hack/lib.sh)."""
    explicit = os.environ.get("MPIOPERATOR_CACHE")
    if explicit:
        return Path(explicit)
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "mpioperator"
