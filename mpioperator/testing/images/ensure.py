"""Build every catalog image (cached by content) and push what a registry lacks.

An image is rebuilt only when its key changes: its Dockerfile, the context files it copies, its build args
and the ID of the image it is built FROM. An unchanged image costs no buildah build at all.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import shutil
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Collection, Iterator
from dataclasses import dataclass
from pathlib import Path

from mpioperator.testing.cachedir import cache_dir
from mpioperator.testing.images import catalog, debian, staging, wheelhouse
from mpioperator.testing.images.buildah import Buildah, qualified, repository_path
from mpioperator.testing.images.context import inputs_digest
from mpioperator.testing.images.keys import build_key, file_digest
from mpioperator.testing.images.versions import REPO_ROOT, pinned

# The tools a build runs on the host, and the Debian packages that provide them.
HOST_TOOLS = {"debootstrap": "debootstrap", "buildah": "buildah", "tar": "tar"}
HOST_CA_BUNDLE = Path("/etc/ssl/certs/ca-certificates.crt")
# Host pip settings the builds' pip gets too (an index mirror, timeouts), as pip.conf keys.
_PIP_SETTINGS = {
    "PIP_INDEX_URL": "index-url",
    "PIP_EXTRA_INDEX_URL": "extra-index-url",
    "PIP_DEFAULT_TIMEOUT": "timeout",
    "PIP_TRUSTED_HOST": "trusted-host",
}


class ImagesUnavailable(RuntimeError):
    """Images cannot be built on this machine; the message says why and what to install."""


def cache_root() -> Path:
    return cache_dir() / "images" / "buildah"


def check_host() -> None:
    if os.geteuid() != 0:
        raise ImagesUnavailable("building images needs root (debootstrap, buildah's chroot isolation)")
    missing = sorted({package for tool, package in HOST_TOOLS.items() if shutil.which(tool) is None})
    if missing:
        command = f"hack/install-node-packages.sh {' '.join(missing)}"
        raise ImagesUnavailable(f"building images needs {', '.join(missing)}: run {command}")


@dataclass(frozen=True)
class BuildEnv:
    buildah: Buildah
    root: Path

    def say(self, message: str) -> None:
        line = f"[images] {time.strftime('%H:%M:%S')} {message}"
        print(line, file=sys.stderr, flush=True)
        with open(self.buildah.log, "a") as log:
            log.write(line + "\n")

    @property
    def keys_file(self) -> Path:
        return self.root / "keys.json"

    def keys(self) -> dict[str, dict[str, str]]:
        try:
            loaded: dict[str, dict[str, str]] = json.loads(self.keys_file.read_text())
            return loaded
        except (OSError, ValueError):
            return {}

    def remember(self, name: str, key: str, image_id: str) -> None:
        keys = self.keys()
        keys[qualified(name)] = {"key": key, "id": image_id}
        temporary = self.keys_file.with_suffix(".tmp")
        temporary.write_text(json.dumps(keys, indent=1, sort_keys=True))
        os.replace(temporary, self.keys_file)


def build_env() -> BuildEnv:
    root = cache_root()
    (root / "logs").mkdir(parents=True, exist_ok=True)
    for old in sorted((root / "logs").glob("build-*.log"))[:-20]:
        old.unlink(missing_ok=True)
    log = root / "logs" / f"build-{time.strftime('%Y%m%d-%H%M%S')}-{os.getpid()}.log"
    return BuildEnv(Buildah(root, log), root)


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
            env.say(f"still building ... (log: {env.buildah.log})")

    thread = threading.Thread(target=tick, daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join()


def base_key(suite: str) -> str:
    return build_key(
        "debian-minbase",
        params={"suite": suite, "mirror": debian.MIRROR, "recipe": file_digest(Path(debian.__file__))},
    )


def image_key(image: catalog.Image, base_id: str, context: Path | None = None) -> str:
    return build_key(
        "dockerfile",
        parent=base_id,
        params={
            "inputs": inputs_digest(image.dockerfile_path, context or image.context_path),
            "build_args": dict(image.build_args),
            "uses_pip": image.uses_pip,
            # Only when set, so that the images without keep their keys.
            **({"wheels": image.wheels} if image.wheels else {}),
        },
    )


@contextlib.contextmanager
def pip_trust(work: Path) -> Iterator[list[str]]:
    """Volumes for the builds' RUN steps (never in a layer): the host's CA bundle, which this network's
    TLS proxy needs, and a pip.conf naming it, with the host's pip settings. Mounted beside the image's
    own bundle, not over it, so a RUN installing ca-certificates can still replace that."""
    directory = Path(tempfile.mkdtemp(prefix="hostca-", dir=work))
    try:
        lines = ["[global]", "disable-pip-version-check = true"]
        if HOST_CA_BUNDLE.is_file():
            shutil.copy(HOST_CA_BUNDLE, directory / "ca.crt")
            lines.append("cert = /run/hostca/ca.crt")
        lines += [f"{key} = {os.environ[name]}" for name, key in _PIP_SETTINGS.items() if name in os.environ]
        (directory / "pip.conf").write_text("\n".join(lines) + "\n")
        yield [f"{directory}:/run/hostca:ro", f"{directory / 'pip.conf'}:/etc/pip.conf:ro"]
    finally:
        shutil.rmtree(directory, ignore_errors=True)


def build_images(env: BuildEnv, wanted: Collection[str] | None = None) -> dict[str, str]:
    """The catalog images `wanted` (all when None) and their bases, in order, each built only when its key
    changed; returns name -> image ID."""
    work = env.root / "work"
    work.mkdir(exist_ok=True)
    keys = env.keys()
    present = env.buildah.image_ids()

    def cached(name: str, key: str) -> str | None:
        entry = keys.get(qualified(name), {})
        if entry.get("key") == key and present.get(qualified(name)) == entry.get("id"):
            return entry["id"]
        return None

    ids: dict[str, str] = {}
    suite = pinned("DEBIAN_SUITE")
    key = base_key(suite)
    base_id = cached(catalog.BASE, key)
    if base_id is None:
        env.say(f"debootstrap --variant=minbase {suite}, imported as {qualified(catalog.BASE)}")
        with tempfile.TemporaryDirectory(prefix="debootstrap-", dir=work) as scratch:
            base_id = debian.build_base(env.buildah, suite, Path(scratch), env.root / "apt-archives")
        env.remember(catalog.BASE, key, base_id)
        # Every image is rebuilt on a new base: the old ones' layers and layer cache only take disk.
        if keys.get(qualified(catalog.BASE), {}).get("id") not in (None, base_id):
            env.buildah.prune()
    ids[catalog.BASE] = base_id
    with pip_trust(work) as volumes:
        for image in catalog.selection(wanted):
            context = staging.build_context(image)
            key = image_key(image, ids[image.base], context)
            image_id = cached(image.name, key)
            if image_id is None:
                env.say(f"building {image.name} from {image.dockerfile}")
                started = time.monotonic()
                image_volumes = volumes if image.uses_pip else []
                if image.wheels:
                    requirements = REPO_ROOT / image.wheels
                    if not wheelhouse.have_wheels(requirements):
                        env.say(f"downloading the wheels of {image.wheels} into {wheelhouse.wheels_dir()}")
                        wheelhouse.ensure_wheels(requirements, env.buildah.log)
                        env.say(f"downloaded them in {time.monotonic() - started:.0f} s")
                    image_volumes = wheelhouse.offline_volumes(image_volumes, work)
                image_id = env.buildah.bud(
                    image.name,
                    image.dockerfile_path,
                    context,
                    build_args=image.build_args,
                    volumes=image_volumes,
                )
                size = env.buildah.image_size(qualified(image.name))
                env.say(f"built {image.name} in {time.monotonic() - started:.0f} s, {size}")
                env.remember(image.name, key, image_id)
            ids[image.name] = image_id
    return ids


_MANIFEST_TYPES = ", ".join(
    [
        "application/vnd.oci.image.manifest.v1+json",
        "application/vnd.docker.distribution.manifest.v2+json",
    ]
)


def registry_config_digest(registry: str, name: str) -> str | None:
    """The config digest (the image ID) of `name` in `registry`, None when it lacks it."""
    repository, _, tag = repository_path(name).rpartition(":")
    request = urllib.request.Request(
        f"http://{registry}/v2/{repository}/manifests/{tag}", headers={"Accept": _MANIFEST_TYPES}
    )
    try:
        with urllib.request.urlopen(request, timeout=60) as response:
            manifest = json.loads(response.read())
    except urllib.error.HTTPError as error:
        if error.code == 404:
            return None
        raise
    digest = manifest.get("config", {}).get("digest")
    return str(digest) if digest else None


def push_images(env: BuildEnv, ids: dict[str, str], registry: str) -> list[str]:
    """Pushes each pushable image whose ID the registry does not hold under its name; returns those."""
    pushed = []
    for image in catalog.CATALOG:
        if image.name not in ids:
            continue
        if image.push and registry_config_digest(registry, image.name) != f"sha256:{ids[image.name]}":
            env.say(f"pushing {image.name} to {registry}")
            env.buildah.push(image.name, registry)
            pushed.append(image.name)
    return pushed


@contextlib.contextmanager
def _built(wanted: Collection[str] | None) -> Iterator[tuple[BuildEnv, dict[str, str], float]]:
    """Under the build lock, with the minute's progress line: the images built or cached (their ids by
    name), and when the building started; the lock and the progress line last until the block ends."""
    check_host()
    with locked():
        env = build_env()
        started = time.monotonic()
        with progress(env):
            yield env, build_images(env, wanted), started


def build_all(wanted: Collection[str] | None = None) -> tuple[BuildEnv, dict[str, str]]:
    with _built(wanted) as (env, ids, started):
        env.say(f"{len(ids)} images built or cached in {time.monotonic() - started:.1f} s")
        return env, ids


def ensure_images(registry: str, wanted: Collection[str] | None = None) -> list[str]:
    """Build what is missing, push what the registry at `registry` (host:port) lacks.

    Returns the pushed images' names as pods use them (`mpioperator/mpi-pi:openmpi`,
    `registry.k8s.io/pause:3.10`, ...); each is in the registry under the repository path a docker.io or
    registry.k8s.io mirror is asked for.
    """
    with _built(wanted) as (env, ids, started):
        built = time.monotonic() - started
        pushed = push_images(env, ids, registry)
        env.say(
            f"{len(ids)} images ready in {built:.1f} s; pushed {len(pushed)} to {registry} "
            f"in {time.monotonic() - started - built:.1f} s"
        )
    return [image.name for image in catalog.CATALOG if image.push and image.name in ids]
