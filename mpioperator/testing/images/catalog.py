"""The catalog: every image the project builds, its Dockerfile and context, build args and the image it is
built FROM. The build goes in catalog order (an image's base is earlier or is the debootstrap base).

Adding an image is one entry here (and its Dockerfile under images/); docs/development.md says how.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from mpioperator.testing.images.context import instructions
from mpioperator.testing.images.versions import REPO_ROOT, pinned

# Made by debootstrap (images/debian.py), not from a Dockerfile; Dockerfiles say `FROM debian:bookworm`.
BASE = f"debian:{pinned('DEBIAN_SUITE')}"
PYTHON_BASE = f"mpioperator/python:{pinned('PYTHON_VERSION')}-{pinned('DEBIAN_SUITE')}"
OPERATOR = "mpioperator/mpi-operator-py:latest"
KUBECTL_DELIVERY = "mpioperator/kubectl-delivery:latest"


@dataclass(frozen=True)
class Image:
    name: str  # as pods and Dockerfiles name it (short names are Docker Hub's)
    dockerfile: str  # relative to the repository root
    context: str  # relative to the repository root
    base: str  # the image its stages start FROM: BASE or an earlier entry's name
    build_args: Mapping[str, str] = field(default_factory=dict)
    push: bool = True  # to the real node's registry (pods pull it)
    # Context file name -> control-plane binary copied there before the build (images/staging.py).
    staged: Mapping[str, str] = field(default_factory=dict)

    @property
    def dockerfile_path(self) -> Path:
        return REPO_ROOT / self.dockerfile

    @property
    def context_path(self) -> Path:
        return REPO_ROOT / self.context

    @property
    def uses_pip(self) -> bool:
        """Whether a RUN step runs pip, which needs the host's CA here (ensure.pip_trust). buildah leaves
        the mount points (an empty /etc/pip.conf and /run/hostca) in the layers, so only these get them."""
        return any(
            i.keyword == "RUN" and re.search(r"\bpip3?\b", i.arguments)
            for i in instructions(self.dockerfile_path.read_text())
        )


_MPI_ARGS = {
    "openmpi": {},
    "mpich": {"MPICH_VERSION": pinned("MPICH_VERSION")},
    "intel": {"IMPI_VERSION": pinned("IMPI_VERSION")},
    "openmpi5": {"OPENMPI5_VERSION": pinned("OPENMPI5_VERSION")},
}

# The pi builder of Intel MPI installs the matching development kit.
_PI_ARGS = {"openmpi": {}, "mpich": {}, "intel": _MPI_ARGS["intel"], "openmpi5": {}}

CATALOG: tuple[Image, ...] = (
    # A stand-in for python:3.11-slim, the operator Dockerfile's default base, which cannot be pulled here.
    Image(PYTHON_BASE, "images/python/Dockerfile", "images/python", BASE, push=False),
    *(
        Image(f"mpioperator/{mpi}", f"images/mpi-base/{mpi}.Dockerfile", "images/mpi-base", BASE, args)
        for mpi, args in _MPI_ARGS.items()
    ),
    *(
        Image(
            f"mpioperator/mpi-pi:{mpi}",
            f"images/mpi-pi/{mpi}.Dockerfile",
            "images/mpi-pi",
            f"mpioperator/{mpi}",
            args,
        )
        for mpi, args in _PI_ARGS.items()
    ),
    # The cluster check (mpi4py's allreduce) on each MPI base: one Dockerfile, the base a build arg.
    *(
        Image(
            f"mpioperator/mpi4py:{mpi}",
            "images/mpi4py/Dockerfile",
            "images/mpi4py",
            f"mpioperator/{mpi}",
            {"MPI": mpi, "MPI4PY_VERSION": pinned("MPI4PY_VERSION")},
        )
        for mpi in _MPI_ARGS
    ),
    # The tag kubelet and containerd ask for as the sandbox image.
    Image("registry.k8s.io/pause:3.10", "images/pause/Dockerfile", "images/pause", BASE),
    Image(OPERATOR, "Dockerfile", ".", PYTHON_BASE, {"PYTHON_BASE": PYTHON_BASE}),
    # The exec launch agent: a static kubectl (the control plane's) and kubexec.sh, for an init container.
    Image(
        KUBECTL_DELIVERY,
        "images/kubectl-delivery/Dockerfile",
        "images/kubectl-delivery",
        BASE,
        staged={"kubectl": "kubectl"},
    ),
    # Horovod and TensorFlow for the Horovod examples; its cold build compiles Horovod (12-15 minutes here).
    Image(
        "mpioperator/random-walk",
        "images/random-walk/Dockerfile",
        "images/random-walk",
        "mpioperator/openmpi",
    ),
    Image(
        "mpioperator/horovod:0.28.1-tf2.15",
        "images/horovod/Dockerfile",
        "images/horovod",
        "mpioperator/openmpi",
    ),
)


def by_name(name: str) -> Image:
    for image in CATALOG:
        if image.name == name:
            return image
    raise KeyError(name)


def order_problems(catalog: tuple[Image, ...] = CATALOG) -> list[str]:
    """Entries whose base is neither BASE nor an earlier entry, and names listed twice."""
    seen: set[str] = set()
    problems = []
    for image in catalog:
        if image.name in seen:
            problems.append(f"{image.name} is listed twice")
        if image.base != BASE and image.base not in seen:
            problems.append(f"{image.name} is built FROM {image.base}, which is not listed before it")
        seen.add(image.name)
    return problems
