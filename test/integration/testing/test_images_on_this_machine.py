"""The real node's images, built here by buildah from their Dockerfiles, do what the examples and
manifests need: each pi image computes pi with `mpirun -n 2` (in a buildah container, as mpiuser), the
operator image holds the operator and not its test harness nor the build's CA bundle, a second build
builds nothing, the real node's registry holds every image as built here, and containerd pulls every
image from it. Needs root (debootstrap, buildah): elsewhere it is skipped, loudly.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from mpioperator.testing.background import IMAGES
from mpioperator.testing.images import catalog, ensure
from mpioperator.testing.images.buildah import Buildah, qualified, repository_path
from mpioperator.testing.node.services import default_registry_storage
from mpioperator.testing.registry import LocalRegistry
from mpioperator.testing.wait import wait_for

pytestmark = pytest.mark.timeout(3600)

PI_LINE = re.compile(r"^pi is approximately (\d+\.\d+), error \S+, 2 ranks, \S+ s$", re.MULTILINE)
PI_IMAGES = [image.name for image in catalog.CATALOG if image.name.startswith("mpioperator/mpi-pi:")]


@pytest.fixture(scope="module")
def images() -> tuple[ensure.BuildEnv, dict[str, str]]:
    try:
        ensure.check_host()
    except ensure.ImagesUnavailable as error:
        pytest.skip(f"NOT RUN (image builds impossible on this machine): {error}")
    IMAGES.wait()
    return ensure.build_all()


@contextlib.contextmanager
def container(buildah: Buildah, image: str) -> Iterator[str]:
    name = buildah.run("from", "--pull=never", qualified(image), capture=True).strip()
    try:
        yield name
    finally:
        buildah.run("rm", name)


def _run(buildah: Buildah, name: str, *argv: str, user: str = "") -> subprocess.CompletedProcess[str]:
    command = buildah.command(
        "run", "--isolation", "chroot", *(["--user", user] if user else []), name, "--", *argv
    )
    return subprocess.run(
        command, capture_output=True, text=True, env=buildah.environment(), timeout=600, check=False
    )


def _config(buildah: Buildah, image: str) -> dict[str, object]:
    out = buildah.run("inspect", "--type", "image", qualified(image), capture=True)
    config: dict[str, object] = json.loads(out)["OCIv1"]["config"]
    return config


@pytest.mark.parametrize("image", PI_IMAGES)
def test_pi_image_computes_pi_with_two_ranks_as_mpiuser(
    images: tuple[ensure.BuildEnv, dict[str, str]], image: str
) -> None:
    env, _ = images
    config = _config(env.buildah, image)
    assert config["Entrypoint"] == ["/entrypoint.sh"]
    assert config["WorkingDir"] == "/home/mpiuser"
    assert "2222/tcp" in dict(config.get("ExposedPorts") or {})  # type: ignore[call-overload]
    with container(env.buildah, image) as name:
        # Intel MPI's Hydra needs a host file entry for its own name; one host, so localhost.
        ran = _run(
            env.buildah, name, "/entrypoint.sh", "mpirun", "-n", "2", "/home/mpiuser/pi", user="mpiuser"
        )
        assert ran.returncode == 0, ran.stdout + ran.stderr
        match = PI_LINE.search(ran.stdout)
        assert match and match.group(1).startswith("3.141592"), ran.stdout + ran.stderr
        # No compiler in the runtime image: the builder stage had it.
        compilers = _run(env.buildah, name, "sh", "-c", "command -v gcc cc || true")
        assert compilers.stdout.strip() == ""


def test_operator_image_holds_the_operator_without_its_test_harness_nor_the_builds_ca(
    images: tuple[ensure.BuildEnv, dict[str, str]],
) -> None:
    env, _ = images
    config = _config(env.buildah, catalog.OPERATOR)
    assert config["User"] == "65532:65532"
    assert config["Entrypoint"] == ["mpi-operator"]
    assert {"8080/tcp", "8443/tcp"} <= set(dict(config["ExposedPorts"]))  # type: ignore[call-overload]
    with container(env.buildah, catalog.OPERATOR) as name:
        ran = _run(env.buildah, name, "mpi-operator", "--help", user="65532:65532")
        assert ran.returncode == 0, ran.stderr
        assert "usage: mpi-operator" in ran.stdout
        probe = (
            "import importlib.metadata as m, mpioperator, pathlib; "
            "p = pathlib.Path(mpioperator.__file__).parent; "
            "print((p / 'testing').exists(), (p / 'app/main.py').exists(), "
            "sorted(e.name for e in m.entry_points(group='console_scripts')))"
        )
        listed = _run(env.buildah, name, "/opt/venv/bin/python", "-c", probe)
        assert listed.returncode == 0, listed.stderr
        assert listed.stdout.startswith("False True"), listed.stdout
        assert "'kubectl-mpijob'" in listed.stdout and "mpioperator-local-cluster" not in listed.stdout
        # The build's CA and pip.conf were mounted for RUN steps only: buildah 1.28 leaves the (empty)
        # mount points, never their contents.
        leftovers = _run(env.buildah, name, "sh", "-c", "find /run/hostca /etc/pip.conf ! -empty; true")
        assert leftovers.stdout.strip() == "", leftovers.stdout


def test_an_image_whose_build_runs_no_pip_gets_no_ca_mount(
    images: tuple[ensure.BuildEnv, dict[str, str]],
) -> None:
    env, _ = images
    assert not catalog.by_name("mpioperator/mpi-pi:openmpi").uses_pip
    with container(env.buildah, "mpioperator/mpi-pi:openmpi") as name:
        ran = _run(env.buildah, name, "sh", "-c", "ls -d /run/hostca /etc/pip.conf 2>&1; true")
        assert ran.stdout.count("No such file") == 2, ran.stdout


def test_a_second_build_with_nothing_changed_builds_nothing(
    images: tuple[ensure.BuildEnv, dict[str, str]],
) -> None:
    _, ids = images
    env, again = ensure.build_all()
    assert again == ids
    log = env.buildah.log.read_text()
    assert "building " not in log and " bud " not in log, log


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


def _ctr(socket: Path, *args: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["ctr", "--address", str(socket), *args], capture_output=True, text=True, timeout=timeout, check=False
    )


@pytest.mark.skipif(shutil.which("containerd") is None, reason="NOT RUN: containerd is not installed")
def test_containerd_pulls_every_image_from_the_local_registry_and_runs_pi(
    images: tuple[ensure.BuildEnv, dict[str, str]], tmp_path: Path
) -> None:
    env, ids = images
    # The registry storage the real node's registry keeps between runs: a warm run pushes nothing here
    # (pushing compresses gigabytes of torch layers), and what it pulls is what the real tier's pods get.
    registry = LocalRegistry(default_registry_storage(), work_dir=tmp_path / "registry-work")
    registry.start()
    try:
        pushable = ensure.ensure_images(registry.address)
        assert pushable == [image.name for image in catalog.CATALOG if image.push]
        # The registry holds each image as it was built here, and what it holds is not sent again.
        held = {name: ensure.registry_config_digest(registry.address, name) for name in pushable}
        assert held == {name: f"sha256:{ids[name]}" for name in pushable}
        assert ensure.push_images(env, ids, registry.address) == []
        with throwaway_containerd() as socket:
            for name in pushable:
                # The torch images are gigabytes to fetch and unpack.
                pulled = _ctr(
                    socket,
                    "images",
                    "pull",
                    "--plain-http",
                    f"{registry.address}/{repository_path(name)}",
                    timeout=900,
                )
                assert pulled.returncode == 0, pulled.stderr
            listed = _ctr(socket, "images", "ls", "-q").stdout.split()
            assert sorted(listed) == sorted(f"{registry.address}/{repository_path(n)}" for n in pushable)
            # Open MPI refuses root; ctr 1.6 has no --user, so the image's own setpriv drops to mpiuser.
            image = f"{registry.address}/{repository_path('mpioperator/mpi-pi:openmpi')}"
            command = ["/entrypoint.sh", "setpriv", "--reuid=1000", "--regid=1000", "--clear-groups"]
            command += ["mpirun", "-n", "2", "/home/mpiuser/pi"]
            ran = _ctr(
                socket, "run", "--rm", "--env", "HOME=/home/mpiuser", image, f"pi-{os.getpid()}", *command
            )
            assert ran.returncode == 0, ran.stdout + ran.stderr
            match = PI_LINE.search(ran.stdout)
            assert match and match.group(1).startswith("3.141592"), ran.stdout
    finally:
        registry.stop()
