"""The catalog: every image the project builds, its Dockerfile and context, build args and the image it is
built FROM. The build goes in catalog order (an image's base is earlier or is the debootstrap base).

Adding an image is one entry here (and its Dockerfile under images/); docs/development.md says how.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from mpioperator.testing.images.context import instructions
from mpioperator.testing.images.versions import REPO_ROOT, pinned

# Made by debootstrap (images/debian.py), not from a Dockerfile; Dockerfiles say `FROM debian:bookworm`.
BASE = f"debian:{pinned('DEBIAN_SUITE')}"
PYTHON_BASE = f"mpioperator/python:{pinned('PYTHON_VERSION')}-{pinned('DEBIAN_SUITE')}"
OPERATOR = "mpioperator/mpi-operator-py:latest"
KUBECTL_DELIVERY = "mpioperator/kubectl-delivery:latest"
PYTORCH = "mpioperator/pytorch:2.15.0"
DEEPSPEED = "mpioperator/deepspeed:0.19.8"


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
    # A requirements file (relative to the repository root) whose wheels the build gets from the cache
    # instead of the index (images/wheelhouse.py): for images whose pip installs are gigabytes.
    wheels: str = ""

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
    Image(
        "mpioperator/random-walk",
        "images/random-walk/Dockerfile",
        "images/random-walk",
        "mpioperator/openmpi",
    ),
    # Horovod and TensorFlow for the Horovod examples; its cold build compiles Horovod (12-15 minutes here).
    Image(
        "mpioperator/horovod:0.28.1-tf2.15",
        "images/horovod/Dockerfile",
        "images/horovod",
        "mpioperator/openmpi",
    ),
    # PyTorch from PyPI (its CUDA build, run on CPU) and DeepSpeed on it, last: their wheels are gigabytes,
    # fetched once into the cache. The cold build's time and the images' sizes are in docs/development.md.
    Image(
        PYTORCH,
        "images/pytorch/Dockerfile",
        "images/pytorch",
        "mpioperator/openmpi",
        wheels="images/pytorch/requirements.txt",
    ),
    Image(
        DEEPSPEED,
        "images/deepspeed/Dockerfile",
        "images/deepspeed",
        PYTORCH,
        wheels="images/deepspeed/requirements.txt",
    ),
    # The exec launch agent: a static kubectl and kubexec.sh, for an init container. Last, because its
    # kubectl is the control plane's: on a cold machine hack/test.sh builds that while the images above build.
    Image(
        KUBECTL_DELIVERY,
        "images/kubectl-delivery/Dockerfile",
        "images/kubectl-delivery",
        BASE,
        staged={"kubectl": "kubectl"},
    ),
)


def by_name(name: str) -> Image:
    for image in CATALOG:
        if image.name == name:
            return image
    raise KeyError(name)


# What the demo runs: the sandbox image, the operator's Deployment and the pi examples it applies or
# suggests. A first demo then builds none of the training images (Horovod alone compiles for minutes).
DEMO_IMAGES = (
    "registry.k8s.io/pause:3.10",
    OPERATOR,
    "mpioperator/mpi-pi:openmpi",
    "mpioperator/mpi-pi:mpich",
    "mpioperator/mpi-pi:intel",
)


def selection(wanted: Iterable[str] | None, catalog: tuple[Image, ...] = CATALOG) -> tuple[Image, ...]:
    """The entries to build for `wanted` (every entry when None): those named and the images they are
    built FROM, in catalog order. An unknown name raises KeyError, so a typo is not a silent no-op."""
    if wanted is None:
        return catalog
    entries = {image.name: image for image in catalog}
    needed: set[str] = set()
    for name in wanted:
        if name not in entries:
            raise KeyError(f"no image {name!r} in the catalog")
        while name in entries and name not in needed:
            needed.add(name)
            name = entries[name].base
    return tuple(image for image in catalog if image.name in needed)


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
