"""Cache keys: a digest of everything an image is built from, so a rebuild happens only when one changes.

Pure except for `file_digest`/`tree_digest`, which read the files they are given.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Iterable, Mapping
from pathlib import Path

# Bump to rebuild every image after a change in how images are put together that no input shows.
FORMAT_VERSION = 2


def build_key(recipe: str, *, parent: str = "", params: Mapping[str, object] | None = None) -> str:
    """The key of one image: its recipe, its parent's key and its parameters (file digests included)."""
    document = {"format": FORMAT_VERSION, "recipe": recipe, "parent": parent, "params": params or {}}
    return hashlib.sha256(json.dumps(document, sort_keys=True, default=str).encode()).hexdigest()[:32]


def file_digest(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def tree_digest(root: Path, relative_paths: Iterable[str]) -> str:
    """Digest of the names, executable bits and contents of files under `root` (symlinks by target)."""
    digest = hashlib.sha256()
    for relative in sorted(relative_paths):
        path = root / relative
        digest.update(relative.encode() + b"\0")
        if path.is_symlink():
            digest.update(b"link:" + os.readlink(path).encode())
        elif path.is_file():
            digest.update(b"x" if os.access(path, os.X_OK) else b"-")
            digest.update(file_digest(path).encode())
        else:
            digest.update(b"dir")
        digest.update(b"\0")
    return digest.hexdigest()
