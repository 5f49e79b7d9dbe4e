"""Run an mpi-pi image's pi for real, in chroots of the image, the way the operator's pods run it.

`plain`: `mpirun -n 2` on one host. `over_ssh`: three network namespaces joined by a bridge (a
launcher and two workers, each with its own host name); each worker runs the image's sshd as mpiuser
with a freshly made ECDSA key as the operator's Secret provides it, and the launcher runs mpirun with
the operator's launcher environment and hostfile, so both ranks are started over ssh on port 2222.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

from mpioperator.testing.images.chroot import Chroot, ChrootError, stop
from mpioperator.testing.images.mpi import HOME, MPI_UID
from mpioperator.testing.images.store import StoredImage
from mpioperator.testing.images.workspace import BuildEnv, Workspace

SUBNET = "10.231.0"
LAUNCHER = "pi-launcher"
WORKERS = ("pi-worker-0", "pi-worker-1")
USER = f"{MPI_UID}:{MPI_UID}"

# The launcher environment the operator sets for each implementation (upstream-behaviour.md, §4).
LAUNCHER_ENV: Mapping[str, Mapping[str, str]] = {
    "openmpi": {
        "OMPI_MCA_orte_keep_fqdn_hostnames": "true",
        "OMPI_MCA_orte_default_hostfile": "/etc/mpi/hostfile",
        "OMPI_MCA_plm_rsh_args": "-o ConnectionAttempts=10",
        "OMPI_MCA_orte_set_default_slots": "1",
    },
    "intel": {
        "I_MPI_HYDRA_HOST_FILE": "/etc/mpi/hostfile",
        "I_MPI_HYDRA_BOOTSTRAP_EXEC_EXTRA_ARGS": "-o ConnectionAttempts=10",
        "I_MPI_PERHOST": "1",
    },
    "mpich": {
        "HYDRA_HOST_FILE": "/etc/mpi/hostfile",
        "HYDRA_LAUNCH_EXTRA_ARGS": "-o ConnectionAttempts=10",
    },
}


def hostfile(flavour: str, hosts: tuple[str, ...], slots: int = 1) -> str:
    if flavour == "openmpi":
        return "".join(f"{host} slots={slots}\n" for host in hosts)
    return "".join(f"{host}:{slots}\n" for host in hosts)


@dataclass(frozen=True)
class RunResult:
    command: str
    exit_code: int
    output: str


def _ip(*args: str) -> None:
    subprocess.run(["ip", *args], check=True, capture_output=True)


@contextlib.contextmanager
def mpi_network() -> Iterator[dict[str, str]]:
    """Named network namespaces for the launcher and workers; yields host name -> namespace."""
    tag = f"mpiv{os.getpid()}"
    names = {LAUNCHER: f"{tag}-l", **{w: f"{tag}-w{i}" for i, w in enumerate(WORKERS)}}
    try:
        for ns in names.values():
            _ip("netns", "add", ns)
            _ip("-n", ns, "link", "set", "lo", "up")
        launcher = names[LAUNCHER]
        _ip("-n", launcher, "link", "add", "br0", "type", "bridge")
        _ip("-n", launcher, "addr", "add", f"{SUBNET}.1/24", "dev", "br0")
        _ip("-n", launcher, "link", "set", "br0", "up")
        for i, worker in enumerate(WORKERS):
            ns = names[worker]
            _ip("-n", launcher, "link", "add", f"v{i}", "type", "veth", "peer", "name", "eth0", "netns", ns)
            _ip("-n", launcher, "link", "set", f"v{i}", "master", "br0", "up")
            _ip("-n", ns, "addr", "add", f"{SUBNET}.{10 + i}/24", "dev", "eth0")
            _ip("-n", ns, "link", "set", "eth0", "up")
        yield names
    finally:
        for ns in names.values():
            subprocess.run(["ip", "netns", "del", ns], capture_output=True, check=False)


def _image_env(image: StoredImage) -> dict[str, str]:
    env = dict(item.partition("=")[::2] for item in image.runtime.env)
    env["HOME"] = HOME
    return env


def _run(chroot: Chroot, command: str, **kwargs: object) -> RunResult:
    try:
        output = chroot.run(["/bin/sh", "-c", command + " 2>&1"], capture=True, **kwargs)  # type: ignore[arg-type]
        return RunResult(command, 0, output)
    except ChrootError as error:
        code = int(str(error).split("(exit ", 1)[1].split(")", 1)[0])
        return RunResult(command, code, str(error).split(":\n", 1)[-1])


def _wait_for_line(log: Path, text: str, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if log.exists() and text in log.read_text(errors="replace"):
            return
        time.sleep(0.1)
    raise TimeoutError(f"{text!r} not in {log} after {timeout} s:\n{log.read_text(errors='replace')[-2000:]}")


def verify(env: BuildEnv, image: StoredImage, flavour: str, *, extra_args: str = "") -> dict[str, RunResult]:
    """Returns the plain and over-ssh runs of `mpirun -n 2 /home/mpiuser/pi`, and the exit-code run."""
    results: dict[str, RunResult] = {}
    with Workspace(env, image, f"verify-{flavour}") as ws:
        root = ws.root
        home = root / HOME.lstrip("/")
        hosts = [f"{SUBNET}.1 {LAUNCHER}"] + [f"{SUBNET}.{10 + i} {w}" for i, w in enumerate(WORKERS)]
        with open(root / "etc/hosts", "a") as handle:
            handle.write("\n".join(hosts) + "\n")
        (root / "etc/mpi").mkdir(exist_ok=True)
        (root / "etc/mpi/hostfile").write_text(hostfile(flavour, WORKERS))
        base_env = _image_env(image)
        plain = Chroot(root, env=base_env)
        # What the operator's Secret holds: one ECDSA key, mounted as id_rsa, doubling as host key.
        plain.run(
            [
                "/bin/sh",
                "-c",
                f"ssh-keygen -q -t ecdsa -N '' -f {HOME}/.ssh/id_rsa && "
                f"cp {HOME}/.ssh/id_rsa.pub {HOME}/.ssh/authorized_keys",
            ],
            user=USER,
        )
        run = f"/entrypoint.sh mpirun -n 2 {HOME}/pi {extra_args}".strip()
        results["plain"] = _run(plain, run, user=USER, private_network=True, hostname=LAUNCHER, timeout=120)
        launcher_env = {**base_env, **LAUNCHER_ENV[flavour], "K_MPI_JOB_ROLE": "launcher"}
        launcher = Chroot(root, env=launcher_env)
        with mpi_network() as names:
            daemons = []
            try:
                for worker in WORKERS:
                    log = ws.directory / f"sshd-{worker}.log"
                    sshd = ["/usr/sbin/sshd", "-De", "-f", f"{HOME}/.sshd_config"]
                    daemons.append(
                        plain.start(sshd, log=log, user=USER, netns=names[worker], hostname=worker)
                    )
                    _wait_for_line(log, "Server listening", 30)
                results["over_ssh"] = _run(
                    launcher, run, user=USER, netns=names[LAUNCHER], hostname=LAUNCHER, timeout=180
                )
                results["exit_code"] = _run(
                    launcher,
                    f"{run} --exit-code 3",
                    user=USER,
                    netns=names[LAUNCHER],
                    hostname=LAUNCHER,
                    timeout=180,
                )
            finally:
                for daemon in daemons:
                    stop(daemon)
        del home
    return results


def verify_operator(env: BuildEnv, image: StoredImage) -> RunResult:
    """The image's entrypoint with --help, as the image's user, on a read-only root (as the Deployment)."""
    with Workspace(env, image, "verify-operator") as ws:
        chroot = Chroot(ws.root, env=dict(item.partition("=")[::2] for item in image.runtime.env))
        command = " ".join([*image.runtime.entrypoint, "--help"])
        command += (
            "; echo uid=$(id -u); touch /probe 2>/dev/null && echo root writable || echo root read-only"
        )
        return _run(chroot, command, user=image.runtime.user or None, read_only=True, timeout=120)


def carries_host_ca_bundle(env: BuildEnv, image: StoredImage, host_bundle: Path) -> bool:
    """True if the image's CA bundle is the host's (the build's TLS trust must not leak into images)."""
    with Workspace(env, image, "verify-ca") as ws:
        bundle = ws.root / "etc/ssl/certs/ca-certificates.crt"
        return bundle.is_file() and bundle.read_bytes() == host_bundle.read_bytes()
