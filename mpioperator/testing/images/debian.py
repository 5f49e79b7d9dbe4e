"""The base every Dockerfile starts FROM: Debian's minbase made by debootstrap, slimmed as Debian's slim
images are, imported into buildah's store as `debian:<suite>` so `FROM debian:bookworm` finds it there."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

from mpioperator.testing.images.buildah import Buildah, qualified

DEFAULT_PATH_ENV = "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
MIRROR = "http://deb.debian.org/debian"

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


def _remove(path: Path) -> None:
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path)
    else:
        path.unlink()


def slim(root: Path) -> None:
    """What the dpkg excludes would have left out had they been there from the start."""
    for pattern in ("usr/share/man/*", "usr/share/info/*", "usr/share/lintian/*", "var/lib/apt/lists/*"):
        for path in root.glob(pattern):
            _remove(path)
    for path in (root / "usr/share/locale").glob("*"):
        if path.name != "locale.alias":
            _remove(path)
    for path in (root / "usr/share/doc").glob("*/*"):
        if path.name != "copyright":
            _remove(path)
    for path in (root / "var/cache/apt").rglob("*.deb"):
        path.unlink()
    # ldconfig's cache of inodes and times: the one file that differs between two debootstraps.
    (root / "var/cache/ldconfig/aux-cache").unlink(missing_ok=True)
    for path in (root / "var/log").rglob("*"):
        if path.is_file():
            path.write_bytes(b"")
    (root / "etc/dpkg/dpkg.cfg.d/excludes").write_text(DPKG_EXCLUDES)
    # Runtimes and builders mount their own.
    (root / "etc/resolv.conf").write_text("")
    (root / "etc/hostname").write_text("")


def build_base(buildah: Buildah, suite: str, work: Path, apt_archives: Path) -> str:
    """debootstrap `suite`, import it as `debian:<suite>`; returns its image ID."""
    root = work / "rootfs"
    apt_archives.mkdir(parents=True, exist_ok=True)
    command = ["debootstrap", "--variant=minbase", f"--cache-dir={apt_archives}", suite, str(root), MIRROR]
    with open(buildah.log, "a") as log:
        log.write(f"$ {' '.join(command)}\n")
        log.flush()
        result = subprocess.run(command, stdout=log, stderr=subprocess.STDOUT, check=False)
    if result.returncode != 0:
        raise RuntimeError(f"debootstrap failed (exit {result.returncode}):\n{buildah.log_tail()}")
    slim(root)
    layer = work / "rootfs.tar"
    # The same packages give the same layer, so the same image ID (fixed order, times and owners); /dev,
    # /proc and /sys are a runtime's to fill, so a layer holds them empty.
    tar = ["tar", "-C", str(root), "--numeric-owner", "--xattrs", "--sort=name", "--mtime=@0"]
    tar += ["--pax-option=exthdr.name=%d/PaxHeaders/%f,delete=atime,delete=ctime"]
    tar += ["--exclude=./dev/*", "--exclude=./proc/*", "--exclude=./sys/*"]
    subprocess.run([*tar, "-cf", str(layer), "."], check=True)
    shutil.rmtree(root)
    container = buildah.run("from", "scratch", capture=True).strip()
    try:
        buildah.run("add", container, str(layer), "/")
        buildah.run("config", "--env", DEFAULT_PATH_ENV, "--cmd", "bash", container)
        name = qualified(f"debian:{suite}")
        buildah.run("commit", "--timestamp", "0", container, name)
    finally:
        buildah.run("rm", container)
        layer.unlink(missing_ok=True)
    return buildah.image_id(name)
