"""A root filesystem under construction on top of a stored image, committed as one new layer."""

from __future__ import annotations

import shutil
import sys
import tempfile
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from types import TracebackType

from mpioperator.testing.images import layers
from mpioperator.testing.images.chroot import Bind, Chroot
from mpioperator.testing.images.oci import Layer, RuntimeConfig
from mpioperator.testing.images.store import ImageStore, StoredImage


@dataclass(frozen=True)
class BuildEnv:
    """Where builds keep things between runs and how they write layers."""

    store: ImageStore
    cache: Path  # apt lists and archives, downloaded wheels, compiled programs
    work: Path  # scratch root filesystems (removed after each build)
    log: Path
    gzip_level: int | None = None
    mirror: str = "http://deb.debian.org/debian"
    started: float = field(default_factory=time.monotonic)

    @property
    def apt_lists(self) -> Path:
        return self.cache / "apt" / "lists"

    @property
    def apt_archives(self) -> Path:
        return self.cache / "apt" / "archives"

    def say(self, message: str) -> None:
        print(f"[images {time.monotonic() - self.started:5.0f}s] {message}", file=sys.stderr, flush=True)

    def apt_binds(self) -> list[Bind]:
        """The shared apt caches and the host's DNS config, so images never carry any of them."""
        self.apt_lists.mkdir(parents=True, exist_ok=True)
        (self.apt_archives / "partial").mkdir(parents=True, exist_ok=True)
        return [
            Bind(Path("/etc/resolv.conf"), "/etc/resolv.conf"),
            Bind(self.apt_lists, "/var/lib/apt/lists", read_only=False),
            Bind(self.apt_archives, "/var/cache/apt/archives", read_only=False),
        ]


class Workspace:
    """`with Workspace(env, base) as ws:` extracts `base`, then `ws.commit(...)` stores the changes."""

    def __init__(self, env: BuildEnv, base: StoredImage | None, name: str):
        self.env = env
        self.base = base
        self.name = name
        self.directory = Path(
            tempfile.mkdtemp(prefix=name.replace("/", "_").replace(":", "_") + "-", dir=env.work)
        )
        self.root = self.directory / "rootfs"
        self._before: dict[str, layers.Entry] = {}

    def __enter__(self) -> Workspace:
        self.root.mkdir(mode=0o755)
        if self.base is not None:
            for layer in self.base.layers:
                layers.apply_layer(self.env.store.blob_path(layer.digest), self.root)
            self._before = layers.snapshot(self.root)
        return self

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, tb: TracebackType | None
    ) -> None:
        shutil.rmtree(self.directory, ignore_errors=True)

    def chroot(self, binds: Sequence[Bind] = (), env: Mapping[str, str] | None = None) -> Chroot:
        return Chroot(self.root, [*self.env.apt_binds(), *binds], dict(env or {}))

    def run(self, script: str, *, binds: Sequence[Bind] = (), env: Mapping[str, str] | None = None) -> None:
        """A shell script as root inside the tree, logged to the build log."""
        self.chroot(binds, env).shell(script, log=self.env.log)

    def apt_install(self, packages: Sequence[str]) -> None:
        """apt-get install without recommends; refreshes the shared package lists once if they are stale."""
        install = "apt-get install -y -q --no-install-recommends " + " ".join(packages)
        env = {"DEBIAN_FRONTEND": "noninteractive"}
        try:
            self.run(install, env=env)
        except RuntimeError:
            self.env.say(f"{self.name}: apt-get install failed; refreshing the package lists and retrying")
            self.run("apt-get update -q && " + install, env=env)
        # apt's binary caches (70 MB) are rebuilt whenever apt runs; no image needs them.
        self.run("rm -f /var/cache/apt/*.bin /var/cache/debconf/*-old /var/log/apt/eipp.log.xz")

    def commit(
        self, key: str, runtime: RuntimeConfig, comment: str, *, name: str | None = None
    ) -> StoredImage:
        """Write what changed since the base as one layer and record the image (as `name`) in the store."""
        after = layers.snapshot(self.root)
        change = layers.diff(self._before, after)
        paths = layers.with_parents(change.changed)
        with self.env.store.new_blob() as temporary:
            layer = layers.write_layer(
                self.root, paths, change.removed, temporary, gzip_level=self.env.gzip_level, comment=comment
            )
            self.env.store.adopt_blob(temporary, layer.digest)
        base_layers: tuple[Layer, ...] = self.base.layers if self.base else ()
        image = StoredImage(name or self.name, key, (*base_layers, layer), runtime)
        self.env.store.save(image)
        return image


def derived_runtime(base: StoredImage | None, **changes: object) -> RuntimeConfig:
    runtime = base.runtime if base else RuntimeConfig()
    return replace(runtime, **changes)  # type: ignore[arg-type]
