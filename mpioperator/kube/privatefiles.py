"""Credentials the TLS layer must read from files (it loads client certificates from paths only), kept
in a private folder of this process (0700, removed at exit), one 0600 file each."""

from __future__ import annotations

import atexit
import os
import shutil
import tempfile

_private_dir: str | None = None


def write_private(content: bytes, path: str | None = None) -> str:
    """A new private file holding `content`, or `path` (one of ours) replaced by it in one step: a
    connection made meanwhile reads the old file or the new one, never half of one."""
    global _private_dir
    if _private_dir is None:
        _private_dir = tempfile.mkdtemp(prefix="mpioperator-kubeconfig-")
        atexit.register(shutil.rmtree, _private_dir, True)
    fd, written = tempfile.mkstemp(dir=_private_dir, suffix=".pem")
    with os.fdopen(fd, "wb") as out:
        out.write(content)
    if path is None:
        return written
    os.replace(written, path)
    return path
