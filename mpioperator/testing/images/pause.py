"""registry.k8s.io/pause: our own static pause program, the only file of a one-layer image."""

from __future__ import annotations

import shutil
import subprocess
import tempfile
from pathlib import Path

from mpioperator.testing.images import layers
from mpioperator.testing.images.keys import build_key, file_digest
from mpioperator.testing.images.oci import RuntimeConfig
from mpioperator.testing.images.store import StoredImage
from mpioperator.testing.images.versions import REPO_ROOT
from mpioperator.testing.images.workspace import BuildEnv

SOURCE = REPO_ROOT / "images" / "pause" / "pause.c"
# The tag kubelet 1.36 and containerd ask for as the sandbox image.
NAME = "registry.k8s.io/pause:3.10"
CFLAGS = ("-static", "-Os", "-s", "-Wall", "-Werror")


def compiler_version() -> str:
    result = subprocess.run(["gcc", "--version"], capture_output=True, text=True, check=False)
    return result.stdout.splitlines()[0] if result.returncode == 0 and result.stdout else "missing"


def pause_key() -> str:
    params = {"source": file_digest(SOURCE), "cflags": CFLAGS, "gcc": compiler_version()}
    return build_key("pause", params={**params, "recipe": file_digest(Path(__file__))})


def ensure_pause(env: BuildEnv) -> StoredImage:
    key = pause_key()
    cached = env.store.lookup(NAME, key)
    if cached is not None:
        return cached
    env.say(f"building {NAME} (gcc -static)")
    directory = Path(tempfile.mkdtemp(prefix="pause-", dir=env.work))
    try:
        root = directory / "rootfs"
        root.mkdir()
        result = subprocess.run(
            ["gcc", *CFLAGS, "-o", str(root / "pause"), str(SOURCE)],
            capture_output=True,
            text=True,
            check=False,
        )
        if result.returncode != 0:
            raise RuntimeError(f"compiling {SOURCE} failed:\n{result.stderr}")
        (root / "pause").chmod(0o755)
        with env.store.new_blob() as temporary:
            layer = layers.write_layer(
                root, ["pause"], [], temporary, gzip_level=env.gzip_level, comment="our static pause program"
            )
            env.store.adopt_blob(temporary, layer.digest)
        image = StoredImage(NAME, key, (layer,), RuntimeConfig(entrypoint=("/pause",), user="65535:65535"))
        env.store.save(image)
        return image
    finally:
        shutil.rmtree(directory, ignore_errors=True)
