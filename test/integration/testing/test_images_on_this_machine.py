"""The real node's images, built here without Docker, do what the examples and manifests need.

Each mpi-pi image computes pi with `mpirun -n 2` on one host and with both ranks started over ssh on
two other hosts (network namespaces), exits 3 when asked to, and containerd 1.6 pulls every image
from the local registry. Needs root (debootstrap, chroot, namespaces): elsewhere it is skipped, loudly.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from mpioperator.testing.images import ensure, mpi, verify
from mpioperator.testing.images.contents import installed_package
from mpioperator.testing.images.oci import Reference
from mpioperator.testing.images.operator_image import HOST_CA_BUNDLE
from mpioperator.testing.images.operator_image import NAME as OPERATOR_IMAGE
from mpioperator.testing.images.store import StoredImage
from mpioperator.testing.images.workspace import BuildEnv
from mpioperator.testing.registry import LocalRegistry
from mpioperator.testing.wait import wait_for

pytestmark = pytest.mark.timeout(1800)

PI_LINE = re.compile(r"^pi is approximately (\d+\.\d+), error \S+, 2 ranks, \S+ s$", re.MULTILINE)


@pytest.fixture(scope="module")
def images() -> tuple[BuildEnv, dict[str, StoredImage]]:
    try:
        ensure.check_host()
    except ensure.ImagesUnavailable as error:
        pytest.skip(f"NOT RUN (image builds impossible on this machine): {error}")
    with ensure.locked():
        env = ensure.build_env()
        built = {image.name: image for image in ensure.build_images(env)}
    return env, built


def _pi_value(output: str) -> str:
    match = PI_LINE.search(output)
    assert match, output
    return match.group(1)


@pytest.mark.parametrize("flavour", list(mpi.FLAVOURS))
def test_mpi_image_computes_pi_on_one_host_and_over_ssh_and_passes_on_exit_codes(
    images: tuple[BuildEnv, dict[str, StoredImage]], flavour: str
) -> None:
    env, built = images
    results = verify.verify(env, built[mpi.image_name(flavour)], flavour)

    plain = results["plain"]
    assert plain.exit_code == 0, plain.output
    assert {"rank 0 of 2 on pi-launcher", "rank 1 of 2 on pi-launcher"} <= set(plain.output.splitlines())
    assert _pi_value(plain.output).startswith("3.141592")

    over_ssh = results["over_ssh"]
    assert over_ssh.exit_code == 0, over_ssh.output
    assert {"rank 0 of 2 on pi-worker-0", "rank 1 of 2 on pi-worker-1"} <= set(over_ssh.output.splitlines())
    assert _pi_value(over_ssh.output).startswith("3.141592")

    failing = results["exit_code"]
    assert failing.exit_code == 3, failing.output
    assert _pi_value(failing.output).startswith("3.141592")


def test_operator_image_runs_as_nonroot_on_a_read_only_root(
    images: tuple[BuildEnv, dict[str, StoredImage]],
) -> None:
    env, built = images
    image = built[OPERATOR_IMAGE]
    assert image.runtime.user == "65532:65532"
    assert image.runtime.entrypoint == ("mpi-operator",)
    assert {"8080/tcp", "8443/tcp"} <= set(image.runtime.exposed_ports)
    result = verify.verify_operator(env, image)
    assert result.exit_code == 0, result.output
    assert "usage: mpi-operator" in result.output
    assert "uid=65532" in result.output
    assert "root read-only" in result.output


def test_operator_image_installs_the_operator_without_its_test_harness(
    images: tuple[BuildEnv, dict[str, StoredImage]],
) -> None:
    env, built = images
    package = installed_package(env.store, built[OPERATOR_IMAGE], "/opt/venv", "mpioperator")
    assert {"app/main.py", "controller/controller.py", "kube/client.py"} <= package.files
    assert package.files_under("testing") == []
    assert "mpi-operator" in package.scripts
    assert "mpioperator-local-cluster" not in package.scripts
    assert "kubectl-mpijob" in package.scripts
    # The kubectl mpijob plugin reads job files, so the package declares PyYAML for itself.
    assert [r for r in package.requires if r.lower().startswith("pyyaml")] == ["PyYAML<7,>=6.0"]


@pytest.mark.skipif(not HOST_CA_BUNDLE.is_file(), reason="the host has no CA bundle to compare with")
def test_the_host_ca_bundle_used_by_pip_during_the_build_is_not_in_the_operator_image(
    images: tuple[BuildEnv, dict[str, StoredImage]],
) -> None:
    env, built = images
    assert not verify.carries_host_ca_bundle(env, built[OPERATOR_IMAGE], HOST_CA_BUNDLE)


@contextlib.contextmanager
def throwaway_containerd() -> Iterator[Path]:
    """containerd with its own root, state and socket under a temp dir; everything removed after."""
    directory = Path(tempfile.mkdtemp(prefix="mpioperator-containerd-"))
    config = directory / "config.toml"
    config.write_text(
        "version = 2\n"
        f'root = "{directory}/root"\nstate = "{directory}/state"\n'
        'disabled_plugins = ["io.containerd.grpc.v1.cri"]\n'
        f'[grpc]\n  address = "{directory}/containerd.sock"\n'
        f'[ttrpc]\n  address = "{directory}/containerd-ttrpc.sock"\n'
    )
    log = open(directory / "containerd.log", "wb")  # noqa: SIM115 - closed in finally
    process = subprocess.Popen(
        ["containerd", "--config", str(config)], stdout=log, stderr=subprocess.STDOUT, start_new_session=True
    )
    socket = directory / "containerd.sock"
    try:
        wait_for(socket.exists, timeout=30, what="containerd's socket")
        yield socket
    finally:
        process.terminate()
        try:
            process.wait(15)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        log.close()
        mounts = [line.split()[4] for line in Path("/proc/self/mountinfo").read_text().splitlines()]
        for mount in sorted((m for m in mounts if m.startswith(str(directory))), reverse=True):
            subprocess.run(["umount", "-l", mount], check=False)
        shutil.rmtree(directory, ignore_errors=True)


def _ctr(socket: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["ctr", "--address", str(socket), *args], capture_output=True, text=True, timeout=300, check=False
    )


@pytest.mark.skipif(shutil.which("containerd") is None, reason="NOT RUN: containerd is not installed")
def test_containerd_pulls_every_image_from_the_local_registry_and_runs_pi(
    images: tuple[BuildEnv, dict[str, StoredImage]], tmp_path: Path
) -> None:
    env, built = images
    registry = LocalRegistry(tmp_path / "registry", work_dir=tmp_path / "registry-work")
    registry.start()
    try:
        ensure.push_images(env, list(built.values()), registry.address)
        with throwaway_containerd() as socket:
            for name in built:
                ref = Reference.parse(name)
                pulled = _ctr(socket, "images", "pull", "--plain-http", f"{registry.address}/{ref}")
                assert pulled.returncode == 0, pulled.stderr
            listed = _ctr(socket, "images", "ls", "-q").stdout.split()
            assert sorted(listed) == sorted(f"{registry.address}/{Reference.parse(n)}" for n in built)
            # Open MPI refuses root; ctr 1.6 has no --user, so the image's own setpriv drops to mpiuser.
            image = f"{registry.address}/{Reference.parse(mpi.image_name('openmpi'))}"
            command = ["/entrypoint.sh", "setpriv", "--reuid=1000", "--regid=1000", "--clear-groups"]
            command += ["mpirun", "-n", "2", "/home/mpiuser/pi"]
            ran = _ctr(
                socket, "run", "--rm", "--env", "HOME=/home/mpiuser", image, f"pi-{os.getpid()}", *command
            )
            assert ran.returncode == 0, ran.stdout + ran.stderr
            assert _pi_value(ran.stdout).startswith("3.141592")
    finally:
        registry.stop()
