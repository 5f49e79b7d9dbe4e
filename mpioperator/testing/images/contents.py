"""What a stored image holds, read from its layer tars alone (no chroot, no root): the paths of its
merged file system and the bytes of a file, with each layer's whiteouts applied as a runtime would."""

from __future__ import annotations

import fnmatch
import posixpath
import tarfile
from collections.abc import Iterator
from dataclasses import dataclass, field

from mpioperator.testing.images.store import ImageStore, StoredImage

_WHITEOUT = ".wh."
_OPAQUE = ".wh..wh..opq"


def _members(store: ImageStore, digest: str) -> Iterator[tuple[tarfile.TarInfo, tarfile.TarFile]]:
    # "r|*": a stream, plain or gzip, as the layer's media type says; members are read in order.
    with store.open_blob(digest) as blob, tarfile.open(fileobj=blob, mode="r|*") as tar:
        for member in tar:
            yield member, tar


def _normal(name: str) -> str:
    """A tar member name relative to the image root, without a leading ./ or /; "" is the root."""
    return posixpath.normpath("/" + name).lstrip("/")


def _under(path: str, top: str) -> bool:
    return top == "" or path == top or path.startswith(top + "/")


@dataclass
class _LayerChanges:
    """A layer's own entries, and what its whiteouts hide of the layers below (never of itself)."""

    files: dict[str, bytes | None] = field(default_factory=dict)
    hidden: list[str] = field(default_factory=list)  # these paths and everything under them
    emptied: list[str] = field(default_factory=list)  # everything under these directories

    def hides(self, path: str) -> bool:
        return any(_under(path, gone) for gone in self.hidden) or any(
            path != top and _under(path, top) for top in self.emptied
        )


def _changes(store: ImageStore, digest: str, read: str | None) -> _LayerChanges:
    changes = _LayerChanges()
    for member, tar in _members(store, digest):
        name = _normal(member.name)
        parent, base = posixpath.split(name)
        if base == _OPAQUE:
            changes.emptied.append(parent)
        elif base.startswith(_WHITEOUT):
            changes.hidden.append(posixpath.join(parent, base[len(_WHITEOUT) :]))
        elif name:
            content = None
            if name == read and member.isfile():
                extracted = tar.extractfile(member)
                content = extracted.read() if extracted is not None else None
            changes.files[name] = content
            while (name := posixpath.dirname(name)) and name not in changes.files:
                changes.files[name] = None  # a parent the tar implies without an entry of its own
    return changes


def image_paths(store: ImageStore, image: StoredImage) -> set[str]:
    """Every path of the image's merged file system, relative to its root (no leading slash)."""
    paths: set[str] = set()
    for layer in image.layers:
        changes = _changes(store, layer.digest, read=None)
        paths = {path for path in paths if not changes.hides(path)} | changes.files.keys()
    return paths


def read_image_file(store: ImageStore, image: StoredImage, path: str) -> bytes | None:
    """The content of a regular file in the image as its last layer to write it left it; None if absent."""
    wanted = _normal(path)
    content: bytes | None = None
    for layer in image.layers:
        changes = _changes(store, layer.digest, read=wanted)
        if changes.hides(wanted):
            content = None
        if wanted in changes.files:
            content = changes.files[wanted]
    return content


@dataclass(frozen=True)
class InstalledPackage:
    """A Python distribution as a venv in an image holds it."""

    files: frozenset[str]  # paths under site-packages/<package>/, relative to it
    scripts: frozenset[str]  # names in the venv's bin/
    requires: tuple[str, ...]  # the Requires-Dist values of its METADATA, in order

    def files_under(self, subpackage: str) -> list[str]:
        return sorted(path for path in self.files if _under(path, subpackage))


def installed_package(store: ImageStore, image: StoredImage, venv: str, package: str) -> InstalledPackage:
    """`package` as installed into the venv at `venv` (e.g. /opt/venv) of the image."""
    root = _normal(venv)
    paths = image_paths(store, image)
    site = [
        path
        for path in paths
        if posixpath.basename(path) == "site-packages" and path.startswith(f"{root}/lib/python")
    ]
    if len(site) != 1:
        raise LookupError(f"{venv} in {image.name} has {len(site)} site-packages directories: {site}")
    package_dir = f"{site[0]}/{package}"
    metadata = [path for path in paths if fnmatch.fnmatch(path, f"{site[0]}/{package}-*.dist-info/METADATA")]
    if len(metadata) != 1:
        raise LookupError(f"{image.name} has {len(metadata)} {package} METADATA files: {metadata}")
    text = (read_image_file(store, image, metadata[0]) or b"").decode()
    return InstalledPackage(
        files=frozenset(
            path.removeprefix(package_dir + "/") for path in paths if path.startswith(package_dir + "/")
        ),
        scripts=frozenset(
            posixpath.basename(path) for path in paths if posixpath.dirname(path) == f"{root}/bin"
        ),
        requires=tuple(
            line.partition(":")[2].strip() for line in text.splitlines() if line.startswith("Requires-Dist:")
        ),
    )
