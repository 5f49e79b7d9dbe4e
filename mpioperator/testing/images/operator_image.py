"""The operator's image, built by executing the project's Dockerfile on a locally made Python base.

The Dockerfile's base (`PYTHON_BASE`, python:3.11-slim by default) cannot be pulled here; the python3 of
the pinned Debian suite (the same pinned PYTHON_VERSION) with its venv module and CA certificates stands in
for it. pip in the build
stage reaches PyPI through the host's network; the host's CA bundle is mounted for those RUN steps
only (this network intercepts TLS), so it never lands in an image.
"""

from __future__ import annotations

import os
from pathlib import Path

from mpioperator.testing.images.chroot import Bind
from mpioperator.testing.images.debian import DEFAULT_PATH_ENV
from mpioperator.testing.images.dockerfile_build import DockerfileBuild, dockerfile_inputs
from mpioperator.testing.images.keys import build_key, file_digest
from mpioperator.testing.images.oci import RuntimeConfig
from mpioperator.testing.images.store import StoredImage
from mpioperator.testing.images.versions import REPO_ROOT, pinned
from mpioperator.testing.images.workspace import BuildEnv, Workspace

PYTHON_VERSION = pinned("PYTHON_VERSION")
PYTHON_BASE = f"local/python:{PYTHON_VERSION}-{pinned('DEBIAN_SUITE')}"
PYTHON_PACKAGES = ("python3", "python3-venv", "ca-certificates")
NAME = "mpioperator/mpi-operator-py:latest"
DOCKERFILE = REPO_ROOT / "Dockerfile"
HOST_CA_BUNDLE = Path("/etc/ssl/certs/ca-certificates.crt")
IMAGE_CA_BUNDLE = "/etc/ssl/certs/ca-certificates.crt"
# Host pip settings passed to RUN steps (an index mirror, timeouts), never into the image config.
_PIP_SETTINGS = ("PIP_INDEX_URL", "PIP_EXTRA_INDEX_URL", "PIP_DEFAULT_TIMEOUT", "PIP_TRUSTED_HOST")


def ensure_python_base(env: BuildEnv, base: StoredImage) -> StoredImage:
    key = build_key(
        "python-base",
        parent=base.key,
        params={"packages": PYTHON_PACKAGES, "recipe": file_digest(Path(__file__))},
    )
    cached = env.store.lookup(PYTHON_BASE, key)
    if cached is not None:
        return cached
    env.say(f"building {PYTHON_BASE} (apt: {' '.join(PYTHON_PACKAGES)})")
    with Workspace(env, base, PYTHON_BASE) as ws:
        ws.apt_install(PYTHON_PACKAGES)
        want = tuple(int(part) for part in PYTHON_VERSION.split("."))
        ws.run(f'python3 -c "import sys, venv; assert sys.version_info[:2] == {want}, sys.version"')
        # python:X.Y-slim also names its interpreter `python`; Dockerfiles written for it may use either.
        ws.run("ln -sf python3 /usr/bin/python")
        runtime = RuntimeConfig(env=(DEFAULT_PATH_ENV, "LANG=C.UTF-8"), cmd=("python3",))
        return ws.commit(key, runtime, f"python3 {PYTHON_VERSION}, venv, CA certificates (Debian)")


def run_trust() -> tuple[list[Bind], dict[str, str]]:
    """The host's CA bundle and pip settings, for the build's RUN steps only."""
    binds: list[Bind] = []
    env = {"PIP_DISABLE_PIP_VERSION_CHECK": "1"}
    if HOST_CA_BUNDLE.is_file():
        binds.append(Bind(HOST_CA_BUNDLE, IMAGE_CA_BUNDLE))
        env.update({"PIP_CERT": IMAGE_CA_BUNDLE, "SSL_CERT_FILE": IMAGE_CA_BUNDLE})
    env.update({name: os.environ[name] for name in _PIP_SETTINGS if name in os.environ})
    return binds, env


def ensure_operator_image(env: BuildEnv, python_base: StoredImage) -> StoredImage:
    build_args = {"PYTHON_BASE": PYTHON_BASE}
    key = build_key(
        "operator",
        parent=python_base.key,
        params={
            "inputs": dockerfile_inputs(DOCKERFILE, REPO_ROOT),
            "build_args": build_args,
            "recipe": file_digest(Path(__file__)),
        },
    )
    cached = env.store.lookup(NAME, key)
    if cached is not None:
        return cached
    env.say(f"building {NAME} from {DOCKERFILE.name} (build arg PYTHON_BASE={PYTHON_BASE})")
    binds, run_env = run_trust()
    build = DockerfileBuild(
        env,
        DOCKERFILE,
        REPO_ROOT,
        images={PYTHON_BASE: python_base},
        build_args=build_args,
        run_binds=binds,
        run_env=run_env,
    )
    return build.build(NAME, key)
