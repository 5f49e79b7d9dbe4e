"""The check that a job's ranks ran where its hostfile said (mpioperator.testing.ranks)."""

from __future__ import annotations

import pytest

from mpioperator.testing.ranks import assert_ranks_ran_on_hostfile_hosts, hostfile_slots

OPENMPI_HOSTFILE = "pi-worker-0.pi.ns.svc slots=1\npi-worker-1.pi.ns.svc slots=1\n"
SPREAD = "rank 0 of 2 on pi-worker-0\nrank 1 of 2 on pi-worker-1\npi is approximately 3.14159\n"


def test_hostfile_slots_reads_open_mpi_and_hydra_lines_by_pod_hostname() -> None:
    assert hostfile_slots(OPENMPI_HOSTFILE) == {"pi-worker-0": 1, "pi-worker-1": 1}
    assert hostfile_slots("w-0.w.ns.svc.cluster.local:2\nw-1.w.ns.svc:3\n") == {"w-0": 2, "w-1": 3}


def test_ranks_one_per_worker_pass() -> None:
    assert_ranks_ran_on_hostfile_hosts(SPREAD, OPENMPI_HOSTFILE, ranks=2)


def test_ranks_that_all_ran_on_the_launcher_fail() -> None:
    local = "rank 0 of 2 on pi-launcher\nrank 1 of 2 on pi-launcher\npi is approximately 3.14159\n"
    with pytest.raises(AssertionError, match="pi-launcher"):
        assert_ranks_ran_on_hostfile_hosts(local, OPENMPI_HOSTFILE, ranks=2)


def test_more_ranks_on_a_host_than_its_slots_fail() -> None:
    crowded = "rank 0 of 2 on pi-worker-0\nrank 1 of 2 on pi-worker-0\n"
    with pytest.raises(AssertionError, match="more ranks than slots"):
        assert_ranks_ran_on_hostfile_hosts(crowded, OPENMPI_HOSTFILE, ranks=2)


def test_a_missing_rank_line_fails() -> None:
    with pytest.raises(AssertionError, match="rank lines"):
        assert_ranks_ran_on_hostfile_hosts("rank 0 of 2 on pi-worker-0\n", OPENMPI_HOSTFILE, ranks=2)
