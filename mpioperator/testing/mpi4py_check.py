"""The mpi4py cluster check (images/mpi4py/allreduce.py): its images, and what its launcher log says.

Each rank prints three lines: `rank R of N on HOST` (HOST is MPI's processor name), `library of rank R:
<first line of MPI.Get_library_version()>` and `allreduce of rank R: SUM`. A check passes when every rank
ran on the host the hostfile gave it, got the sum n(n+1)/2 of rank + 1, and loaded the image's MPI.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from mpioperator.testing.ranks import ranks_by_host

PYTHON = "/opt/mpi4py/bin/python"
SCRIPT = "/opt/mpi4py/allreduce.py"


@dataclass(frozen=True)
class CheckImage:
    """One image of the check: the MPI it holds, as mpiImplementation names it and as the library says."""

    mpi: str  # the MPI base image's short name: openmpi, openmpi5, mpich, intel
    implementation: str  # spec.mpiImplementation
    family: str  # as library_of() names it
    major: int

    @property
    def image(self) -> str:
        return f"mpioperator/mpi4py:{self.mpi}"


IMAGES = {
    image.mpi: image
    for image in (
        CheckImage("openmpi", "OpenMPI", "Open MPI", 4),
        CheckImage("openmpi5", "OpenMPI", "Open MPI", 5),
        CheckImage("mpich", "MPICH", "MPICH", 4),
        CheckImage("intel", "Intel", "Intel MPI", 2021),
    )
}

LIBRARY_LINE = re.compile(r"^library of rank (\d+): (.*)$", re.MULTILINE)
ALLREDUCE_LINE = re.compile(r"^allreduce of rank (\d+): (-?\d+)$", re.MULTILINE)
_FAMILIES = (
    ("Open MPI", re.compile(r"^Open MPI v(\d+)\.")),
    ("MPICH", re.compile(r"^MPICH Version:\s*(\d+)\.")),
    ("Intel MPI", re.compile(r"^Intel\(R\) MPI Library (\d+)\.")),
)


def library_of(line: str) -> tuple[str, int] | None:
    """The MPI family and major version a Get_library_version() first line names, None if unknown."""
    for family, pattern in _FAMILIES:
        found = pattern.match(line.strip())
        if found:
            return family, int(found.group(1))
    return None


def libraries(log: str) -> dict[int, str]:
    return {int(rank): line.strip() for rank, line in LIBRARY_LINE.findall(log)}


def sums(log: str) -> dict[int, int]:
    return {int(rank): int(total) for rank, total in ALLREDUCE_LINE.findall(log)}


def hostfile_hosts(hostfile: str) -> list[str]:
    """The hostfile's hosts in order, each by its first DNS label (the pod's hostname)."""
    return [line.split()[0].split(":")[0].split(".")[0] for line in hostfile.splitlines() if line.strip()]


def check_problems(log: str, hostfile: str, expected: CheckImage, slots: int = 1) -> list[str]:
    """What is wrong with a finished check's launcher log, given the job's hostfile; empty when it passed.

    Ranks are dealt to the hostfile's hosts in order, `slots` each (every MPI's default mapping by slot), so
    rank r belongs on host r // slots."""
    hosts = hostfile_hosts(hostfile)
    ranks = len(hosts) * slots
    problems = []
    where = ranks_by_host(log)
    want = {host: list(range(i * slots, (i + 1) * slots)) for i, host in enumerate(hosts)}
    if where != want:
        problems.append(f"ranks by host {where}, the hostfile gives {want}")
    total = ranks * (ranks + 1) // 2
    got = sums(log)
    if got != dict.fromkeys(range(ranks), total):
        problems.append(f"allreduce sums by rank {got}, expected {total} on each of {ranks} ranks")
    found = libraries(log)
    if sorted(found) != list(range(ranks)):
        problems.append(f"library lines from ranks {sorted(found)}, expected 0..{ranks - 1}")
    for rank, line in sorted(found.items()):
        if library_of(line) != (expected.family, expected.major):
            problems.append(f"rank {rank} loaded {line!r}, not {expected.family} {expected.major}")
    return problems
