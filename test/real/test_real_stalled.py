"""A stalled job caught (mpioperator.io/stall-timeout-seconds): a real MPI program, mpi4py on Open MPI,
in which rank 1 sleeps for ever before the allreduce, so rank 0 blocks in the collective and the launcher
prints nothing more. The operator reads the launcher's log (every second here), marks the job Stalled with one
Warning after 20 s of silence, restarts it as a whole once (mpioperator.io/restart-policy), and when the
new attempt stalls too with no restart left, fails it (mpioperator.io/stall-action: fail) and stops its
launcher."""

from __future__ import annotations

from typing import Any

import pytest

from mpioperator.api.extensions import launcher_log, restarts
from mpioperator.testing.cluster import LocalCluster
from mpioperator.testing.jobs import Job
from mpioperator.testing.mpi4py_check import IMAGES, PYTHON
from mpioperator.testing.operator import OperatorProcess
from mpioperator.testing.wait import WaitTimeout, wait_for
from test.real.test_real_mpi4py import check_job
from test.real.test_real_mpijobs import diagnosis

# Two attempts: each a worker start-up, 20 s of silence and a log read or two, on a loaded machine.
STALL_TIMEOUT = 600.0

BLOCKED_IN_ALLREDUCE = (
    "import time\n"
    "from mpi4py import MPI\n"
    "comm = MPI.COMM_WORLD\n"
    "print(f'rank {comm.rank} reaches the allreduce', flush=True)\n"
    "if comm.rank == 1:\n"
    "    time.sleep(10**9)\n"
    "print(f'rank {comm.rank} allreduce {comm.allreduce(1)}', flush=True)\n"
)


@pytest.fixture
def ns(real_cluster: LocalCluster, make_namespace: Any, log_reading_operator: OperatorProcess) -> str:
    name: str = make_namespace(real_cluster)
    return name


def stalling_job(name: str) -> dict[str, Any]:
    body = check_job(name, IMAGES["openmpi"], agent="ssh", as_worker=False)
    launcher = body["spec"]["mpiReplicaSpecs"]["Launcher"]["template"]["spec"]["containers"][0]
    launcher["args"] = ["mpirun", "-n", "2", PYTHON, "-c", BLOCKED_IN_ALLREDUCE]
    body["spec"]["runPolicy"]["cleanPodPolicy"] = "Running"
    body["metadata"]["annotations"] = {
        launcher_log.STALL_TIMEOUT: "20",
        launcher_log.STALL_ACTION: "fail",
        restarts.RESTART_POLICY: "OnFailure",
        restarts.MAX_RESTARTS: "1",
        restarts.RESTART_BACKOFF: "1",
    }
    return body


def test_a_rank_blocked_in_an_allreduce_stalls_the_job_which_restarts_once_then_fails(
    real_cluster: LocalCluster, ns: str
) -> None:
    job = Job(real_cluster, ns, "stalled").submit(stalling_job("stalled"))
    try:
        failed = wait_for(lambda: job.condition("Failed"), timeout=STALL_TIMEOUT, what="stalled to fail")
    except WaitTimeout as timeout:
        raise AssertionError(f"{timeout}\n{diagnosis(job)}") from None
    assert failed is not None
    shown = real_cluster.kubectl("-n", ns, "describe", "mpijob", "stalled").stdout
    events = real_cluster.kubectl(
        "-n", ns, "get", "events", "--field-selector=involvedObject.kind=MPIJob", "--sort-by=.lastTimestamp"
    ).stdout
    print(f"$ kubectl describe mpijob stalled\n{shown}\n$ kubectl get events (the MPIJob's)\n{events}")

    assert failed["reason"] == "MPIJobStalled", failed
    assert failed["message"] == (
        f"MPIJob {ns}/stalled shows no new launcher output for 20s; it is failed ({launcher_log.STALL_ACTION}: fail)"
    ), failed
    status = (job.get() or {})["status"]
    assert status["restarts"] == 1, status
    stalled = next(c for c in status["conditions"] if c["type"] == "Stalled")
    assert (stalled["status"], stalled["reason"]) == ("True", "MPIJobStalled"), stalled
    reasons = [
        e["reason"]
        for e in real_cluster.rest.get(f"/api/v1/namespaces/{ns}/events")["items"]
        if e["involvedObject"].get("kind") == "MPIJob"
    ]
    # One Warning per stalled attempt, and the restart between them.
    assert reasons.count("MPIJobStalled") == 2 and reasons.count("MPIJobRestarting") == 1, reasons
    restarting = [
        e["message"]
        for e in real_cluster.rest.get(f"/api/v1/namespaces/{ns}/events")["items"]
        if e["reason"] == "MPIJobRestarting"
    ]
    assert f"it stalled: MPIJob {ns}/stalled shows no new launcher output for 20s" in restarting[0], (
        restarting
    )
    # The blocked mpirun does not hold the node: the launcher Job is suspended and the workers go.
    wait_for(
        lambda: (job.launcher() or {}).get("spec", {}).get("suspend") is True and not job.pods(),
        timeout=120,
        what="the stalled job's launcher suspended and its pods gone",
    )
