"""The failed rank named: a real MPI program in which rank 3 of 4 exits 7, for Open MPI 4 and 5, MPICH and
Intel MPI. The Failed condition and its event name the rank, its worker pod, that pod's node and the exit
code; the last lines of the worker's log and of the launcher's stay on the MPIJob after cleanup has deleted
the pods (cleanPodPolicy Running).

Two workers of two slots each, so rank 3 is the second worker's second rank (hostfile order, slots per
worker). The four jobs run side by side on one operator for the module: the first test submits them all.
"""

from __future__ import annotations

import shlex
from collections.abc import Iterator
from typing import Any

import pytest

from mpioperator.testing.cluster import LocalCluster
from mpioperator.testing.jobs import Job
from mpioperator.testing.mpi4py_check import IMAGES, PYTHON
from mpioperator.testing.wait import WaitTimeout, wait_for
from test.real.conftest import running_operator
from test.real.test_real_mpi4py import check_job
from test.real.test_real_mpijobs import diagnosis

# One line: every MPI hands it to its ranks unchanged. Rank 3 leaves without MPI_Finalize, as a crashing
# rank does, once every other rank has handed it its part of a gather and has had two seconds to leave MPI:
# under Open MPI 5 a rank still inside a collective when rank 3's socket closes aborts, and prterun then
# names that abort instead of rank 3 (seen once on a loaded node). The others leave later unless mpirun ends
# them first (Open MPI does): MPICH's mpiexec never ends ranks blocked in a collective on another host, so
# they must not block.
PROGRAM = (
    "import os,socket,time;from mpi4py import MPI;w=MPI.COMM_WORLD;"
    "print('rank',w.rank,'of',w.size,'on',socket.gethostname(),flush=True);w.gather(w.rank,root=3);"
    "w.rank==3 and (time.sleep(2),print('rank 3 gives up with exit code 7',flush=True),os._exit(7));"
    "time.sleep(10);os._exit(0)"
)
# Hydra (MPICH, Intel MPI) names a rank that exits non-zero only in the table this flag prints.
HYDRA_FLAGS = {"mpich": ["-print-all-exitcodes"], "intel": ["-print-all-exitcodes"]}
FAIL_TIMEOUT = 300.0


def failing_job(mpi: str) -> dict[str, Any]:
    name = f"rank3-{mpi}"
    body = check_job(name, IMAGES[mpi], agent="ssh", as_worker=False, workers=2)
    spec = body["spec"]
    spec["slotsPerWorker"] = 2
    spec["runPolicy"] = {"cleanPodPolicy": "Running", "backoffLimit": 0}
    launcher = spec["mpiReplicaSpecs"]["Launcher"]["template"]["spec"]["containers"][0]
    command = ["mpirun", *HYDRA_FLAGS.get(mpi, []), "-n", "4", PYTHON, "-c", PROGRAM]
    launcher["args"] = command
    if mpi == "intel":
        # Intel MPI's proxies on the workers connect back to the launcher by name at once; on a loaded node
        # the launcher's DNS record can lag its start (the image's entrypoint checks /etc/hosts only).
        own = f"{name}-launcher.{name}"
        wait = f"for i in $(seq 300); do getent hosts {own} >/dev/null && break; sleep 0.2; done"
        launcher["args"] = ["sh", "-c", f"{wait}; exec {shlex.join(command)}"]
    return body


@pytest.fixture(scope="module")
def rank_namespace(real_cluster: LocalCluster, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    name = "failed-rank"
    with running_operator(real_cluster, tmp_path_factory.mktemp("failed-rank-operator")):
        real_cluster.rest.create("/api/v1/namespaces", {"metadata": {"name": name}})
        try:
            yield name
        finally:
            real_cluster.kubectl("delete", "namespace", name, "--wait=false", check=False)


def submit_all(cluster: LocalCluster, namespace: str) -> None:
    for mpi in IMAGES:
        job = Job(cluster, namespace, f"rank3-{mpi}")
        if job.get() is None:
            job.submit(failing_job(mpi))


def events_of(cluster: LocalCluster, namespace: str, name: str) -> list[dict[str, Any]]:
    found = cluster.rest.get(
        f"/api/v1/namespaces/{namespace}/events?fieldSelector=involvedObject.kind=MPIJob,"
        f"involvedObject.name={name}"
    )["items"]
    return list(found)


@pytest.mark.parametrize("mpi", list(IMAGES))
def test_rank_3_exiting_7_is_named_with_its_pod_node_and_exit_code_and_its_last_lines_outlive_cleanup(
    real_cluster: LocalCluster, rank_namespace: str, mpi: str
) -> None:
    submit_all(real_cluster, rank_namespace)
    job = Job(real_cluster, rank_namespace, f"rank3-{mpi}")
    worker = f"{job.name}-worker-1"
    nodes = [n["metadata"]["name"] for n in real_cluster.rest.get("/api/v1/nodes")["items"]]

    try:
        failed = job.wait_condition("Failed", timeout=FAIL_TIMEOUT)
        # cleanPodPolicy Running: the workers are deleted once the job has failed.
        wait_for(lambda: not job.pods("worker"), timeout=60, what="the workers deleted by cleanup")
    except WaitTimeout as timeout:
        raise AssertionError(f"{timeout}\n{diagnosis(job)}") from None

    message = failed["message"]
    print(f"{mpi}: {message}")
    assert "rank 3" in message and f"pod {worker}" in message, message
    assert "exit code 7" in message, message
    node = next((n for n in nodes if f"node {n}" in message), None)
    assert node is not None, (nodes, message)
    warnings = [
        e["message"] for e in events_of(real_cluster, rank_namespace, job.name) if e["type"] == "Warning"
    ]
    assert sum("rank 3" in m and f"pod {worker}" in m for m in warnings) == 1, warnings

    kept = (job.get() or {})["status"].get("lastWords") or {}
    print(f"{mpi}: kept after cleanup: {kept}")
    assert kept.get("rank") == 3 and kept.get("exitCode") == 7, kept
    assert kept.get("pod") == worker and kept.get("node") == node, kept
    assert kept["worker"]["pod"] == worker and kept["worker"]["lines"], kept
    assert any("rank 3 gives up with exit code 7" in line for line in kept["launcher"]["lines"]), kept
    assert all(len(line.encode()) <= 2048 for line in kept["launcher"]["lines"] + kept["worker"]["lines"])
    assert len(kept["launcher"]["lines"]) <= 20 and len(kept["worker"]["lines"]) <= 20, kept
