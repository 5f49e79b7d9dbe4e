"""The local image store: content-addressed blobs plus one record per built image, in the cache dir.

A record names the image, the key of the inputs it was built from, its layers and runtime config; the
manifest and config blobs follow from those. `lookup` returns a record only when its key matches and
every blob it names is still there, so a half-written or pruned store just means a rebuild.
"""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO

from mpioperator.testing.images.oci import (
    Layer,
    RuntimeConfig,
    canonical_json,
    image_config,
    image_manifest,
    sha256_digest,
)


@dataclass(frozen=True)
class StoredImage:
    name: str
    key: str
    layers: tuple[Layer, ...]
    runtime: RuntimeConfig

    @property
    def config_bytes(self) -> bytes:
        return canonical_json(image_config(self.runtime, self.layers))

    @property
    def manifest_bytes(self) -> bytes:
        return canonical_json(image_manifest(self.config_bytes, self.layers))

    @property
    def manifest_digest(self) -> str:
        return sha256_digest(self.manifest_bytes)

    def to_json(self) -> dict[str, object]:
        return {
            "name": self.name,
            "key": self.key,
            "layers": [layer.to_json() for layer in self.layers],
            "config": self.runtime.to_json(),
        }

    @classmethod
    def from_json(cls, data: dict[str, object]) -> StoredImage:
        layers = data["layers"]
        config = data["config"]
        assert isinstance(layers, list)
        assert isinstance(config, dict)
        return cls(
            name=str(data["name"]),
            key=str(data["key"]),
            layers=tuple(Layer.from_json(layer) for layer in layers),
            runtime=RuntimeConfig.from_json(config),
        )


def _record_name(name: str) -> str:
    return name.replace("/", "_").replace(":", "_") + ".json"


class ImageStore:
    def __init__(self, root: Path):
        self.root = root
        self.blobs = root / "blobs" / "sha256"
        self.records = root / "images"
        self.blobs.mkdir(parents=True, exist_ok=True)
        self.records.mkdir(parents=True, exist_ok=True)

    def blob_path(self, digest: str) -> Path:
        algorithm, _, hexdigest = digest.partition(":")
        if algorithm != "sha256" or len(hexdigest) != 64:
            raise ValueError(f"not a sha256 digest: {digest}")
        return self.blobs / hexdigest

    def has_blob(self, digest: str) -> bool:
        return self.blob_path(digest).is_file()

    @contextlib.contextmanager
    def new_blob(self) -> Iterator[Path]:
        """A temporary path in the store's file system, for a blob whose digest is known only once written."""
        fd, name = tempfile.mkstemp(dir=self.blobs.parent, prefix="incoming-")
        os.close(fd)
        path = Path(name)
        try:
            yield path
        finally:
            path.unlink(missing_ok=True)

    def adopt_blob(self, temporary: Path, digest: str) -> None:
        os.replace(temporary, self.blob_path(digest))

    def put_bytes(self, data: bytes) -> str:
        digest = sha256_digest(data)
        path = self.blob_path(digest)
        if not path.exists():
            with self.new_blob() as temporary:
                temporary.write_bytes(data)
                self.adopt_blob(temporary, digest)
        return digest

    def open_blob(self, digest: str) -> IO[bytes]:
        return open(self.blob_path(digest), "rb")

    def save(self, image: StoredImage) -> None:
        self.put_bytes(image.config_bytes)
        self.put_bytes(image.manifest_bytes)
        missing = [layer.digest for layer in image.layers if not self.has_blob(layer.digest)]
        if missing:
            raise FileNotFoundError(f"{image.name}: layer blobs missing from the store: {missing}")
        record = self.records / _record_name(image.name)
        temporary = record.with_suffix(".tmp")
        temporary.write_text(json.dumps(image.to_json(), indent=1))
        os.replace(temporary, record)

    def lookup(self, name: str, key: str) -> StoredImage | None:
        record = self.records / _record_name(name)
        try:
            image = StoredImage.from_json(json.loads(record.read_text()))
        except (FileNotFoundError, ValueError, KeyError, AssertionError):
            return None
        if image.key != key or not all(self.has_blob(layer.digest) for layer in image.layers):
            return None
        return image


def layers_of(images: Sequence[StoredImage]) -> set[str]:
    return {layer.digest for image in images for layer in image.layers}
