"""Build every image the real node needs (cached by content) and push what a registry lacks."""

from __future__ import annotations

import atexit
import contextlib
import fcntl
import os
import shutil
import threading
import time
from collections.abc import Iterator
from pathlib import Path

from mpioperator.testing.cachedir import cache_dir
from mpioperator.testing.images.debian import ensure_base
from mpioperator.testing.images.mpi import ensure_mpi_images
from mpioperator.testing.images.operator_image import ensure_operator_image, ensure_python_base
from mpioperator.testing.images.pause import ensure_pause
from mpioperator.testing.images.push import PushStats, RegistryClient, push_image
from mpioperator.testing.images.store import ImageStore, StoredImage
from mpioperator.testing.images.versions import pinned
from mpioperator.testing.images.workspace import BuildEnv
from mpioperator.testing.process import pid_alive

# The tools a build runs on the host, and the Debian packages that provide them.
HOST_TOOLS = {
    "debootstrap": "debootstrap",
    "gcc": "gcc",
    "unshare": "util-linux",
    "chroot": "coreutils",
    "ip": "iproute2",
}


class ImagesUnavailable(RuntimeError):
    """Images cannot be built on this machine; the message says why and what to install."""


def cache_root() -> Path:
    return cache_dir() / "images"


def missing_host_packages() -> list[str]:
    return sorted({package for tool, package in HOST_TOOLS.items() if shutil.which(tool) is None})


def check_host() -> None:
    if os.geteuid() != 0:
        raise ImagesUnavailable("building images needs root (debootstrap, chroot and mount namespaces)")
    missing = missing_host_packages()
    if missing:
        command = f"hack/install-node-packages.sh {' '.join(missing)}"
        raise ImagesUnavailable(f"building images needs {', '.join(missing)}: run {command}")


def build_env(gzip_level: int | None = None) -> BuildEnv:
    """Build settings on the shared cache; scratch trees go to a directory of this process's own."""
    root = cache_root()
    for sub in ("work", "cache", "logs"):
        (root / sub).mkdir(parents=True, exist_ok=True)
    # Scratch trees of builds whose process is gone (killed mid-build).
    for leftover in (root / "work").iterdir():
        if not leftover.name.isdigit() or not pid_alive(int(leftover.name)):
            shutil.rmtree(leftover, ignore_errors=True)
    work = root / "work" / str(os.getpid())
    if not work.exists():
        work.mkdir()
        atexit.register(shutil.rmtree, work, True)
    logs = sorted((root / "logs").glob("build-*.log"))
    for old in logs[:-20]:
        old.unlink(missing_ok=True)
    log = root / "logs" / f"build-{time.strftime('%Y%m%d-%H%M%S')}-{os.getpid()}.log"
    return BuildEnv(ImageStore(root / "store"), root / "cache", work, log, gzip_level=gzip_level)


@contextlib.contextmanager
def locked() -> Iterator[None]:
    """One build per cache at a time: a second caller waits, then finds everything cached."""
    path = cache_root() / ".lock"
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


@contextlib.contextmanager
def progress(env: BuildEnv, every: float = 60.0) -> Iterator[None]:
    """A line on stderr every minute, so a cold build never looks hung."""
    stop = threading.Event()

    def tick() -> None:
        while not stop.wait(every):
            env.say(f"still building ... (log: {env.log})")

    thread = threading.Thread(target=tick, daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join()


def build_images(env: BuildEnv) -> list[StoredImage]:
    """Every image, in dependency order; each is rebuilt only when its key (its inputs) changed."""
    base = ensure_base(env, pinned("DEBIAN_SUITE"))
    images = ensure_mpi_images(env, base)
    images.append(ensure_pause(env))
    images.append(ensure_operator_image(env, ensure_python_base(env, base)))
    return images


def push_images(env: BuildEnv, images: list[StoredImage], registry: str) -> PushStats:
    stats = PushStats()
    known: dict[str, str] = {}
    with RegistryClient(registry) as client:
        for image in images:
            push_image(client, env.store, image, stats=stats, known=known)
    return stats


def ensure_images(registry: str) -> list[str]:
    """Build what is missing, push what the registry at `registry` (host:port) lacks.

    Returns the image names as pods use them (`mpioperator/mpi-pi:openmpi`, `registry.k8s.io/pause:3.10`,
    ...); each is in the registry under the repository path that a docker.io or registry.k8s.io mirror
    is asked for.
    """
    check_host()
    with locked():
        env = build_env()
        started = time.monotonic()
        with progress(env):
            images = build_images(env)
        built = time.monotonic() - started
        stats = push_images(env, images, registry)
        pushed = time.monotonic() - started - built
        env.say(
            f"{len(images)} images ready in {built:.1f} s; pushed to {registry} in {pushed:.1f} s: "
            + stats.summary()
        )
        return [image.name for image in images]
