"""The mpi4py cluster check's reading of a launcher log (mpioperator.testing.mpi4py_check)."""

from __future__ import annotations

import pytest

from mpioperator.testing.mpi4py_check import IMAGES, check_problems, hostfile_hosts, library_of

HOSTFILE = "c-worker-0.c.ns.svc slots=1\nc-worker-1.c.ns.svc slots=1\n"
OPEN_MPI_5 = "Open MPI v5.0.11, package: Open MPI runner@host Distribution, ident: 5.0.11, repo rev: v5.0.11"


def log(hosts: list[str], library: str, total: int) -> str:
    lines = []
    for rank, host in enumerate(hosts):
        lines += [
            f"rank {rank} of {len(hosts)} on {host}",
            f"library of rank {rank}: {library}",
            f"allreduce of rank {rank}: {total}",
        ]
    return "\n".join(lines) + "\n"


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        (
            "Open MPI v4.1.4, package: Debian OpenMPI, ident: 4.1.4, repo rev: v4.1.4, May 26, 2022",
            ("Open MPI", 4),
        ),
        (OPEN_MPI_5, ("Open MPI", 5)),
        ("MPICH Version:      4.3.2", ("MPICH", 4)),
        ("Intel(R) MPI Library 2021.19 for Linux* OS", ("Intel MPI", 2021)),
        ("Some Other MPI 1.0", None),
    ],
)
def test_library_of_names_the_family_and_major_version(line: str, expected: tuple[str, int] | None) -> None:
    assert library_of(line) == expected


def test_hostfile_hosts_are_first_labels_in_order_for_open_mpi_and_hydra() -> None:
    assert hostfile_hosts(HOSTFILE) == ["c-worker-0", "c-worker-1"]
    assert hostfile_hosts("c-launcher.c.ns.svc:1\nc-worker-0.c.ns.svc.cluster.local:1\n") == [
        "c-launcher",
        "c-worker-0",
    ]


def test_a_check_whose_ranks_ran_where_the_hostfile_says_with_the_images_mpi_passes() -> None:
    assert (
        check_problems(log(["c-worker-0", "c-worker-1"], OPEN_MPI_5, 3), HOSTFILE, IMAGES["openmpi5"]) == []
    )


def test_ranks_on_the_launcher_fail_the_check() -> None:
    problems = check_problems(log(["c-launcher", "c-launcher"], OPEN_MPI_5, 3), HOSTFILE, IMAGES["openmpi5"])
    assert len(problems) == 1 and "c-launcher" in problems[0], problems


def test_ranks_on_swapped_hosts_fail_the_check() -> None:
    problems = check_problems(log(["c-worker-1", "c-worker-0"], OPEN_MPI_5, 3), HOSTFILE, IMAGES["openmpi5"])
    assert len(problems) == 1 and "ranks by host" in problems[0], problems


def test_a_wrong_sum_fails_the_check() -> None:
    problems = check_problems(log(["c-worker-0", "c-worker-1"], OPEN_MPI_5, 2), HOSTFILE, IMAGES["openmpi5"])
    assert problems == ["allreduce sums by rank {0: 2, 1: 2}, expected 3 on each of 2 ranks"]


def test_another_mpi_or_major_version_fails_the_check() -> None:
    problems = check_problems(log(["c-worker-0", "c-worker-1"], OPEN_MPI_5, 3), HOSTFILE, IMAGES["openmpi"])
    assert len(problems) == 2 and all("not Open MPI 4" in p for p in problems), problems
    mpich = check_problems(log(["c-worker-0", "c-worker-1"], OPEN_MPI_5, 3), HOSTFILE, IMAGES["mpich"])
    assert len(mpich) == 2 and all("not MPICH 4" in p for p in mpich), mpich


def test_a_rank_that_never_said_its_library_fails_the_check() -> None:
    text = log(["c-worker-0", "c-worker-1"], OPEN_MPI_5, 3).replace(f"library of rank 1: {OPEN_MPI_5}\n", "")
    assert check_problems(text, HOSTFILE, IMAGES["openmpi5"]) == [
        "library lines from ranks [0], expected 0..1"
    ]
