"""The Debian base every other image starts from: debootstrap's minbase, slimmed, as one layer."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

from mpioperator.testing.images.keys import build_key, file_digest
from mpioperator.testing.images.oci import RuntimeConfig
from mpioperator.testing.images.store import StoredImage
from mpioperator.testing.images.workspace import BuildEnv, Workspace

BASE_NAME = "local/debian-minbase"
DEFAULT_PATH_ENV = "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

# As Debian's slim images do: no manuals, docs or translations in any image built on this base.
DPKG_EXCLUDES = """\
path-exclude /usr/share/doc/*
path-include /usr/share/doc/*/copyright
path-exclude /usr/share/man/*
path-exclude /usr/share/info/*
path-exclude /usr/share/locale/*
path-include /usr/share/locale/locale.alias
path-exclude /usr/share/lintian/*
"""

APT_NO_CACHE = """\
// The build mounts shared package caches; nothing apt downloads stays in an image.
APT::Install-Recommends "false";
APT::Install-Suggests "false";
"""


def base_key(suite: str, mirror: str) -> str:
    return build_key(
        "debian-minbase", params={"suite": suite, "mirror": mirror, "recipe": file_digest(Path(__file__))}
    )


def _slim(root: Path) -> None:
    for pattern in ("usr/share/man/*", "usr/share/info/*", "usr/share/lintian/*"):
        for path in root.glob(pattern):
            shutil.rmtree(path) if path.is_dir() and not path.is_symlink() else path.unlink()
    for path in (root / "usr/share/locale").glob("*"):
        if path.name != "locale.alias":
            shutil.rmtree(path) if path.is_dir() else path.unlink()
    for path in (root / "usr/share/doc").glob("*/*"):
        if path.name != "copyright":
            shutil.rmtree(path) if path.is_dir() and not path.is_symlink() else path.unlink()
    for path in (root / "var/cache/apt/archives").glob("*.deb"):
        path.unlink()
    for path in (root / "var/log").rglob("*"):
        if path.is_file():
            path.write_bytes(b"")
    (root / "etc/dpkg/dpkg.cfg.d/excludes").write_text(DPKG_EXCLUDES)
    (root / "etc/apt/apt.conf.d/90mpioperator").write_text(APT_NO_CACHE)
    # Runtimes mount their own; the build mounts the host's while it runs.
    (root / "etc/resolv.conf").write_text("")
    (root / "etc/hostname").write_text("")


def ensure_base(env: BuildEnv, suite: str) -> StoredImage:
    key = base_key(suite, env.mirror)
    cached = env.store.lookup(BASE_NAME, key)
    if cached is not None:
        return cached
    env.say(f"debootstrap --variant=minbase {suite} (once; cached as a layer)")
    env.apt_archives.mkdir(parents=True, exist_ok=True)
    with Workspace(env, None, BASE_NAME) as ws:
        command = [
            "debootstrap",
            "--variant=minbase",
            f"--cache-dir={env.apt_archives}",
            suite,
            str(ws.root),
            env.mirror,
        ]
        with open(env.log, "a") as log:
            log.write(f"$ {' '.join(command)}\n")
            log.flush()
            result = subprocess.run(command, stdout=log, stderr=subprocess.STDOUT, check=False)
        if result.returncode != 0:
            raise RuntimeError(f"debootstrap failed (exit {result.returncode}); see {env.log}")
        # debootstrap's package lists seed the shared ones later builds mount.
        lists = ws.root / "var/lib/apt/lists"
        env.apt_lists.mkdir(parents=True, exist_ok=True)
        for item in lists.iterdir():
            if item.is_file():
                shutil.copy2(item, env.apt_lists / item.name)
                item.unlink()
        _slim(ws.root)
        return ws.commit(key, RuntimeConfig(env=(DEFAULT_PATH_ENV,), cmd=("bash",)), f"debootstrap {suite}")
