"""Filesystem layers: what changed in a root filesystem, written as an OCI layer tar, and applied back.

A build extracts its base image's layers into a directory, takes a `snapshot` of it, changes the tree
(apt, copies, a compile) and then writes the difference as one layer. Comparing inode numbers as well as
mtime and size catches every rewrite: dpkg and most tools replace a file by renaming a new one over it.
"""

from __future__ import annotations

import gzip
import hashlib
import os
import stat
import tarfile
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Protocol, cast

from mpioperator.testing.images.oci import LAYER_GZIP_MEDIA_TYPE, LAYER_MEDIA_TYPE, Layer

WHITEOUT_PREFIX = ".wh."
OPAQUE_WHITEOUT = ".wh..wh..opq"

# Kernel and runtime file systems: the runtime mounts its own there, so their contents never go into a
# layer (the directories themselves do).
VIRTUAL_DIRS = ("dev", "proc", "sys")


@dataclass(frozen=True)
class Entry:
    """What is compared between two states of one path."""

    mode: int
    uid: int
    gid: int
    size: int
    mtime_ns: int
    inode: int
    link_target: str = ""


Snapshot = Mapping[str, Entry]


def _skipped(relative: str) -> bool:
    top, sep, _ = relative.partition("/")
    return bool(sep) and top in VIRTUAL_DIRS


def walk(root: Path) -> Iterator[tuple[str, os.stat_result]]:
    """Every path under `root` (relative, '/'-separated, sorted per directory), without following links."""
    stack = [""]
    while stack:
        directory = stack.pop()
        with os.scandir(root / directory if directory else root) as it:
            names = sorted(entry.name for entry in it)
        subdirs = []
        for name in names:
            relative = f"{directory}/{name}" if directory else name
            if _skipped(relative):
                continue
            st = os.lstat(root / relative)
            yield relative, st
            if stat.S_ISDIR(st.st_mode):
                subdirs.append(relative)
        stack.extend(reversed(subdirs))


def snapshot(root: Path) -> dict[str, Entry]:
    out: dict[str, Entry] = {}
    for relative, st in walk(root):
        target = os.readlink(root / relative) if stat.S_ISLNK(st.st_mode) else ""
        out[relative] = Entry(st.st_mode, st.st_uid, st.st_gid, st.st_size, st.st_mtime_ns, st.st_ino, target)
    return out


@dataclass(frozen=True)
class Diff:
    changed: tuple[str, ...]  # added or modified, parents before children
    removed: tuple[str, ...]  # topmost removed paths only (a removed directory hides its contents)


def diff(before: Snapshot, after: Snapshot) -> Diff:
    """Pure: which paths a layer must carry to turn `before` into `after`."""
    changed = sorted(path for path, entry in after.items() if before.get(path) != entry)
    gone = {path for path in before if path not in after}
    removed = sorted(path for path in gone if path.rpartition("/")[0] not in gone)
    return Diff(tuple(changed), tuple(removed))


def with_parents(paths: Iterable[str]) -> list[str]:
    """`paths` plus every ancestor directory, sorted so a directory precedes its contents."""
    out: set[str] = set()
    for path in paths:
        out.add(path)
        parent = path.rpartition("/")[0]
        while parent and parent not in out:
            out.add(parent)
            parent = parent.rpartition("/")[0]
    return sorted(out, key=lambda p: p.split("/"))


def whiteout_name(path: str) -> str:
    parent, sep, name = path.rpartition("/")
    return f"{parent}{sep}{WHITEOUT_PREFIX}{name}"


class ByteSink(Protocol):
    def write(self, data: bytes, /) -> int: ...


class _HashingWriter:
    """A write-only file that hashes (and counts) what passes through it on the way to `sink`."""

    def __init__(self, sink: ByteSink):
        self.sink = sink
        self.hash = hashlib.sha256()
        self.size = 0

    def write(self, data: bytes) -> int:
        self.hash.update(data)
        self.size += len(data)
        return self.sink.write(data)


def _tar_info(root: Path, relative: str, st: os.stat_result) -> tarfile.TarInfo:
    info = tarfile.TarInfo(relative)
    info.mode = stat.S_IMODE(st.st_mode)
    info.uid, info.gid = st.st_uid, st.st_gid
    info.uname = info.gname = ""
    info.mtime = int(st.st_mtime)
    if stat.S_ISDIR(st.st_mode):
        info.type = tarfile.DIRTYPE
    elif stat.S_ISLNK(st.st_mode):
        info.type = tarfile.SYMTYPE
        info.linkname = os.readlink(root / relative)
    elif stat.S_ISREG(st.st_mode):
        info.type = tarfile.REGTYPE
        info.size = st.st_size
    elif stat.S_ISCHR(st.st_mode) or stat.S_ISBLK(st.st_mode):
        info.type = tarfile.CHRTYPE if stat.S_ISCHR(st.st_mode) else tarfile.BLKTYPE
        info.devmajor, info.devminor = os.major(st.st_rdev), os.minor(st.st_rdev)
    elif stat.S_ISFIFO(st.st_mode):
        info.type = tarfile.FIFOTYPE
    else:
        raise ValueError(f"cannot put {relative} (mode {oct(st.st_mode)}) into a layer")
    return info


def write_layer_tar(root: Path, paths: Iterable[str], removed: Iterable[str], out: ByteSink) -> None:
    """Write `paths` (relative to `root`, in order) and whiteouts for `removed` as a tar stream.

    A file with several hard links is stored once and linked from its other names, but only between
    names inside this layer: a link to a lower layer's copy would depend on how a runtime applies layers.
    """
    seen_inodes: dict[tuple[int, int], str] = {}
    with tarfile.open(fileobj=cast(IO[bytes], out), mode="w|", format=tarfile.PAX_FORMAT) as tar:
        for path in removed:
            info = tarfile.TarInfo(whiteout_name(path))
            info.mode = 0o644
            tar.addfile(info)
        for relative in paths:
            st = os.lstat(root / relative)
            info = _tar_info(root, relative, st)
            if info.type == tarfile.REGTYPE and st.st_nlink > 1:
                first = seen_inodes.setdefault((st.st_dev, st.st_ino), relative)
                if first != relative:
                    info.type, info.linkname, info.size = tarfile.LNKTYPE, first, 0
            if info.type == tarfile.REGTYPE:
                with open(root / relative, "rb") as data:
                    tar.addfile(info, data)
            else:
                tar.addfile(info)


def write_layer(
    root: Path,
    paths: Iterable[str],
    removed: Iterable[str],
    blob_path: Path,
    *,
    gzip_level: int | None,
    comment: str,
) -> Layer:
    """Write a layer blob to `blob_path` and return its descriptor (gzip when `gzip_level` is given)."""
    with open(blob_path, "wb") as raw:
        blob = _HashingWriter(raw)
        if gzip_level is None:
            write_layer_tar(root, paths, removed, blob)
            digest = "sha256:" + blob.hash.hexdigest()
            return Layer(digest, digest, blob.size, LAYER_MEDIA_TYPE, comment)
        with gzip.GzipFile(
            fileobj=cast(IO[bytes], blob), mode="wb", compresslevel=gzip_level, mtime=0
        ) as compressed:
            plain = _HashingWriter(compressed)
            write_layer_tar(root, paths, removed, plain)
    return Layer(
        "sha256:" + blob.hash.hexdigest(),
        "sha256:" + plain.hash.hexdigest(),
        blob.size,
        LAYER_GZIP_MEDIA_TYPE,
        comment,
    )


def _remove(path: Path) -> None:
    if path.is_dir() and not path.is_symlink():
        for child in sorted(path.rglob("*"), key=lambda p: len(p.parts), reverse=True):
            if child.is_dir() and not child.is_symlink():
                child.rmdir()
            else:
                child.unlink()
        path.rmdir()
    elif path.exists() or path.is_symlink():
        path.unlink()


def apply_layer(blob: Path, root: Path) -> None:
    """Extract one layer over `root` as a runtime would: whiteouts delete, everything else replaces."""
    with tarfile.open(blob, mode="r:*") as tar:
        for member in tar:
            parent, _, name = member.name.rpartition("/")
            if name == OPAQUE_WHITEOUT:
                directory = root / parent
                for child in list(directory.iterdir()) if directory.is_dir() else []:
                    _remove(child)
                continue
            if name.startswith(WHITEOUT_PREFIX):
                _remove(root / parent / name[len(WHITEOUT_PREFIX) :])
                continue
            target = root / member.name
            if target.is_symlink() or (target.exists() and not (member.isdir() and target.is_dir())):
                _remove(target)
            # Ownership, modes and device nodes as stored: we are root and the tree is a container's.
            tar.extract(member, root, set_attrs=True, numeric_owner=True, filter="fully_trusted")
