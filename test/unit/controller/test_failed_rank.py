"""The failed rank read off mpirun's last words: the texts below are copied from real runs on the real
node (images/mpi4py, two workers of two slots, rank 3 of 4 ending badly), one per MPI and ending."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mpioperator.controller.failed_rank import RankFailure, hosts, parse, pod_of
from test.unit.controller import jobs

OPEN_MPI_4_EXIT = """\
rank 3 gives up with exit code 7
--------------------------------------------------------------------------
Primary job  terminated normally, but 1 process returned
a non-zero exit code. Per user-direction, the job has been aborted.
--------------------------------------------------------------------------
--------------------------------------------------------------------------
mpirun detected that one or more processes exited with non-zero status, thus causing
the job to be terminated. The first process to do so was:

  Process name: [[16035,1],3]
  Exit code:    7
--------------------------------------------------------------------------
"""
OPEN_MPI_4_SIGNAL = """\
--------------------------------------------------------------------------
Primary job  terminated normally, but 1 process returned
a non-zero exit code. Per user-direction, the job has been aborted.
--------------------------------------------------------------------------
--------------------------------------------------------------------------
mpirun noticed that process rank 3 with PID 355 on node cap-openmpi-worker-1 exited on signal 9 (Killed).
--------------------------------------------------------------------------
"""
OPEN_MPI_5_EXIT = """\
--------------------------------------------------------------------------
prterun detected that one or more processes exited with non-zero status,
thus causing the job to be terminated. The first process to do so was:

   Process name: [prterun-cap-openmpi5-launcher-1@1,3]
   Exit code:    7
--------------------------------------------------------------------------
[cap-openmpi5-launcher:00001] PMIX ERROR: PMIX_ERR_NOT_FOUND in file \
/openmpi-5.0.11/3rd-party/prrte/src/prted/pmix/pmix_server.c at line 1747
"""
# A rank killed by SIGKILL under Open MPI 5: another rank notices first and aborts; no rank 3 is named.
OPEN_MPI_5_VICTIM_ABORTS = """\
[cap-openmpi5-worker-0:00000] *** An error occurred in Socket closed
[cap-openmpi5-worker-0:00000] *** reported by process [2183725057,1]
--------------------------------------------------------------------------
prterun has exited due to process rank 1 with PID 0 on node cap-openmpi5-worker-0 calling
"abort". This may have caused other processes in the application to be
terminated by signals sent by prterun (as reported here).
--------------------------------------------------------------------------
"""
# MPICH 4.3.2 says nothing of a rank that exits 7; with -print-all-exitcodes, the raw wait statuses.
MPICH_EXIT_SILENT = "rank 3 gives up with exit code 7\n"
MPICH_EXIT_CODES = """\
[mpiexec@cap-mpich-launcher] Exit codes: [cap-mpich-worker-0.cap-mpich.failed-rank.svc] 0,0
[cap-mpich-worker-1.cap-mpich.failed-rank.svc] 0,1792
"""
MPICH_SIGNAL = """\

===================================================================================
=   BAD TERMINATION OF ONE OF YOUR APPLICATION PROCESSES
=   PID 218 RUNNING AT cap-mpich-worker-1.cap-mpich.failed-rank.svc
=   EXIT CODE: 9
=   CLEANING UP REMAINING PROCESSES
=   YOU CAN IGNORE THE BELOW CLEANUP MESSAGES
===================================================================================
YOUR APPLICATION TERMINATED WITH THE EXIT STRING: Killed (signal 9)
This typically refers to a problem with your application.
Please see the FAQ page for debugging suggestions
"""
# Intel MPI 2021.19: the box names rank 2, killed by the cleanup after rank 3 exited 7 (mpirun exits 7).
INTEL_VICTIM_BOX = """\
rank 3 gives up with exit code 7

===================================================================================
=   BAD TERMINATION OF ONE OF YOUR APPLICATION PROCESSES
=   RANK 2 PID 39 RUNNING AT scratch-intel-worker-1.scratch-intel.failed-rank.svc
=   KILLED BY SIGNAL: 9 (Killed)
===================================================================================
"""
INTEL_EXIT_CODES = (
    INTEL_VICTIM_BOX
    + """\
[mpiexec@scratch-intel-launcher] Exit codes: [scratch-intel-worker-0.scratch-intel.failed-rank.svc:0] 137,137
[scratch-intel-worker-1.scratch-intel.failed-rank.svc:0] 137,7
"""
)


@pytest.mark.parametrize(
    ("text", "exit_code", "expected"),
    [
        (OPEN_MPI_4_EXIT, 7, RankFailure(3, exit_code=7)),
        (OPEN_MPI_4_SIGNAL, 137, RankFailure(3, "cap-openmpi-worker-1", signal=9, signal_name="Killed")),
        (OPEN_MPI_5_EXIT, 7, RankFailure(3, exit_code=7)),
        (MPICH_EXIT_CODES, 7, RankFailure(3, "cap-mpich-worker-1", exit_code=7)),
        (MPICH_SIGNAL, 9, RankFailure(None, "cap-mpich-worker-1", signal=9, signal_name="Killed")),
        (INTEL_EXIT_CODES, 7, RankFailure(3, "scratch-intel-worker-1", exit_code=7)),
    ],
    ids=[
        "openmpi4-exit",
        "openmpi4-signal",
        "openmpi5-exit",
        "mpich-exit-codes",
        "mpich-signal",
        "intel-codes",
    ],
)
def test_each_mpis_report_of_a_failed_rank_names_it_and_how_it_ended(
    text: str, exit_code: int, expected: RankFailure
) -> None:
    assert parse(text, exit_code) == expected


@pytest.mark.parametrize(
    "text", [MPICH_EXIT_SILENT, OPEN_MPI_5_VICTIM_ABORTS, INTEL_VICTIM_BOX, "", "Exit codes: [x] ,,,"]
)
def test_a_report_that_names_no_failed_rank_or_only_a_killed_victim_names_none(text: str) -> None:
    assert parse(text, 7) is None


@given(st.text(max_size=3000))
def test_any_text_parses_without_error(text: str) -> None:
    found = parse(text, None)
    assert found is None or isinstance(found, RankFailure)


def test_a_long_text_is_read_only_at_its_end() -> None:
    assert parse("x" * 10_000_000 + OPEN_MPI_4_EXIT, 7) == RankFailure(3, exit_code=7)


def test_rank_maps_to_the_hostfile_host_of_its_slot_with_the_launcher_first_when_it_is_a_worker() -> None:
    job = jobs.reference_job(workers=2)
    job["spec"]["slotsPerWorker"] = 2
    assert pod_of(job, RankFailure(3)) == "pi-worker-1"
    assert pod_of(job, RankFailure(1)) == "pi-worker-0"
    assert pod_of(job, RankFailure(4)) is None
    job["spec"]["runLauncherAsWorker"] = True
    assert hosts(job) == ["pi-launcher", "pi-worker-0", "pi-worker-1"]
    assert pod_of(job, RankFailure(3)) == "pi-worker-0"
    # A host mpirun named wins over the rank's slot.
    assert pod_of(job, RankFailure(0, "pi-worker-1")) == "pi-worker-1"
