"""An image's merged file system read from its layer tars: later layers add, whiteouts hide what lies
below (never the layer's own files), and gzip layers read like plain ones."""

from __future__ import annotations

import gzip
import io
import tarfile
from pathlib import Path

from mpioperator.testing.images.contents import image_paths, installed_package, read_image_file
from mpioperator.testing.images.oci import LAYER_GZIP_MEDIA_TYPE, Layer, RuntimeConfig, sha256_digest
from mpioperator.testing.images.store import ImageStore, StoredImage


def _tar(entries: list[tuple[str, bytes | None]]) -> bytes:
    """A layer tar of (name, content) entries; None makes a directory."""
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w") as tar:
        for name, content in entries:
            info = tarfile.TarInfo(name)
            if content is None:
                info.type = tarfile.DIRTYPE
                tar.addfile(info)
            else:
                info.size = len(content)
                tar.addfile(info, io.BytesIO(content))
    return out.getvalue()


def _image(store: ImageStore, *layers: bytes, gzipped: bool = False) -> StoredImage:
    stored = []
    for data in layers:
        blob = gzip.compress(data) if gzipped else data
        digest = store.put_bytes(blob)
        media = LAYER_GZIP_MEDIA_TYPE if gzipped else Layer.media_type
        stored.append(Layer(digest=digest, diff_id=sha256_digest(data), size=len(blob), media_type=media))
    return StoredImage(name="x", key="k", layers=tuple(stored), runtime=RuntimeConfig())


BASE = _tar(
    [
        ("./etc", None),
        ("./etc/a", b"base a"),
        ("./opt", None),
        ("./opt/old", None),
        ("./opt/old/file", b"old"),
        ("./opt/kept", b"kept"),
    ]
)
TOP = _tar(
    [
        ("etc/b", b"top b"),  # written before the opaque marker of its own directory: still there
        ("etc/.wh..wh..opq", b""),
        ("opt/.wh.old", b""),
        ("opt/kept", b"rewritten"),
    ]
)


def test_whiteouts_hide_the_lower_layers_and_later_layers_win(tmp_path: Path) -> None:
    store = ImageStore(tmp_path)
    image = _image(store, BASE, TOP)
    assert image_paths(store, image) == {"etc", "etc/b", "opt", "opt/kept"}
    assert read_image_file(store, image, "/etc/a") is None
    assert read_image_file(store, image, "/opt/old/file") is None
    assert read_image_file(store, image, "/etc/b") == b"top b"
    assert read_image_file(store, image, "opt/kept") == b"rewritten"


def test_gzip_layers_read_like_plain_ones(tmp_path: Path) -> None:
    store = ImageStore(tmp_path)
    image = _image(store, BASE, gzipped=True)
    assert image_paths(store, image) == {"etc", "etc/a", "opt", "opt/old", "opt/old/file", "opt/kept"}
    assert read_image_file(store, image, "/etc/a") == b"base a"


SITE = "opt/venv/lib/python3.11/site-packages"
VENV = _tar(
    [
        ("opt/venv/bin/tool", b"#!"),
        ("opt/venv/bin/python3", b""),
        (f"{SITE}/pkg/__init__.py", b""),
        (f"{SITE}/pkg/testing/harness.py", b""),
        (
            f"{SITE}/pkg-1.0.dist-info/METADATA",
            b"Name: pkg\nRequires-Dist: a<2\nRequires-Dist: b; extra == 'x'\n",
        ),
        (f"{SITE}/other/__init__.py", b""),
    ]
)


def test_an_installed_package_is_its_files_scripts_and_requirements(tmp_path: Path) -> None:
    store = ImageStore(tmp_path)
    package = installed_package(store, _image(store, VENV), "/opt/venv", "pkg")
    assert package.files == {"__init__.py", "testing", "testing/harness.py"}
    assert package.files_under("testing") == ["testing", "testing/harness.py"]
    assert package.scripts == {"tool", "python3"}
    assert package.requires == ("a<2", "b; extra == 'x'")
