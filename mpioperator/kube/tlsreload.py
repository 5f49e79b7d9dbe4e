"""A TLS context that follows its files: client certificates are rotated in place (the kubelet's,
cert-manager's), and a CA bundle may be too, so new connections must present what the files hold now."""

from __future__ import annotations

import logging
import os
import ssl
import threading
from collections.abc import Callable, Sequence

log = logging.getLogger(__name__)

# What identifies one version of a file: rewritten in place (mtime, size) or swapped by rename or
# symlink (inode, as Secret volumes and the kubelet do). None for a file that is missing right now. File
# times are coarse (a few milliseconds): a rewrite in place to the same size within that tick of the last
# look is seen only at the next change; rotations by rename (the kubelet's, Secret volumes') always show.
_Stamp = tuple[tuple[int, int, int] | None, ...]


def _stamp(paths: Sequence[str]) -> _Stamp:
    stamps: list[tuple[int, int, int] | None] = []
    for path in paths:
        try:
            st = os.stat(path)
        except OSError:
            stamps.append(None)
        else:
            stamps.append((st.st_mtime_ns, st.st_size, st.st_ino))
    return tuple(stamps)


class ReloadingTls:
    """Call it for the context of the next request (aiohttp pools connections by context, so a new
    context means a new connection).

    The files are looked at on every call, not on a timer: one stat() per file, tens of microseconds on a
    slow disk, against the milliseconds of a request. Connections already open keep the certificate they
    were made with until they close.

    A new set of files that does not load (a certificate written before its key, a file cut short) keeps
    the last context that did load, as client-go keeps the last good client certificate: the old
    certificate is normally still valid while its successor is written, so calls go on working, and the
    files are tried again at the next connection. With no context loaded yet the error is raised, and
    the call fails with it."""

    def __init__(self, build: Callable[[], ssl.SSLContext], files: Sequence[str]) -> None:
        self._build = build
        self._files = tuple(files)
        self._lock = threading.Lock()
        self._context: ssl.SSLContext | None = None
        self._stamp: _Stamp | None = None
        self._failed: _Stamp | None = None

    def __call__(self) -> ssl.SSLContext:
        stamp = _stamp(self._files)
        context = self._context
        if context is not None and stamp == self._stamp:
            return context
        with self._lock:
            if self._context is not None and stamp == self._stamp:
                return self._context
            try:
                # Stamped before loading: a file changed while it is read differs at the next look.
                built = self._build()
            except (OSError, ValueError) as exc:  # ssl.SSLError is an OSError
                if self._context is None:
                    raise
                if stamp != self._failed:
                    log.warning(
                        "TLS files %s changed but do not load (%s: %s); new connections keep the "
                        "previous certificate until they do",
                        ", ".join(self._files),
                        type(exc).__name__,
                        exc,
                    )
                    self._failed = stamp
                return self._context
            self._context, self._stamp, self._failed = built, stamp, None
            return built
