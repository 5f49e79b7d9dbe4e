"""The exec launch agent on the real node: FFFFFaraway's example with workers that only `sleep infinity`
computes pi with Open MPI, Intel MPI and MPICH, its launcher reaching them through the API server's exec;
and a launcher's exec into another job's pod is refused."""

from __future__ import annotations

import copy
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from mpioperator.testing.cluster import LocalCluster
from mpioperator.testing.jobs import Job
from mpioperator.testing.operator import OperatorProcess
from mpioperator.testing.ranks import ranks_by_host
from mpioperator.testing.wait import wait_for
from test.real.conftest import running_operator
from test.real.test_real_mpijobs import (
    RUN_TIMEOUT,
    assert_pi_ran_where_the_hostfile_says,
    diagnosis,
    launcher_log,
    run_to_success,
)

REPO = Path(__file__).resolve().parents[2]
FFFFFARAWAY = REPO / "examples" / "v2beta1" / "migrating" / "pi-from-ffffaraway.yaml"
EXEC_OVERLAY = REPO / "manifests" / "overlays" / "exec-agent"
EXEC = {"mpioperator.io/launch-agent": "exec"}
AGENT = "/opt/mpioperator-exec/kubexec.sh"
PI_IMAGES = {"OpenMPI": "mpioperator/mpi-pi:openmpi", "Intel": "mpioperator/mpi-pi:intel"}
PI_IMAGES["MPICH"] = "mpioperator/mpi-pi:mpich"


def exec_rbac_documents(cluster: LocalCluster) -> list[dict[str, Any]]:
    """What the exec-agent overlay adds to the standalone install: its ClusterRole and binding."""
    rendered = cluster.kubectl("kustomize", str(EXEC_OVERLAY)).stdout
    return [
        doc
        for doc in yaml.safe_load_all(rendered)
        if doc
        and doc["kind"] in ("ClusterRole", "ClusterRoleBinding")
        and doc["metadata"]["name"] == "mpi-operator-exec-agent"
    ]


@pytest.fixture(scope="module")
def exec_rbac(real_cluster: LocalCluster) -> Iterator[None]:
    """The overlay's extra rights for the manifests' ServiceAccount, for this module's tests only."""
    documents = exec_rbac_documents(real_cluster)
    assert len(documents) == 2, documents
    real_cluster.kubectl("apply", "--server-side", "-f", "-", input=yaml.safe_dump_all(documents))
    yield
    for doc in documents:
        real_cluster.kubectl("delete", doc["kind"].lower(), doc["metadata"]["name"], "--ignore-not-found")


@pytest.fixture
def exec_operator(real_cluster: LocalCluster, exec_rbac: None, tmp_path: Path) -> Iterator[OperatorProcess]:
    """The operator as the exec-agent overlay runs it: the manifests' ServiceAccount, --exec-agent."""
    with running_operator(real_cluster, tmp_path, "--exec-agent") as proc:
        yield proc


@pytest.fixture
def ns(real_cluster: LocalCluster, make_namespace: Any, exec_operator: OperatorProcess) -> str:
    name: str = make_namespace(real_cluster)
    return name


def sleeping_workers(body: dict[str, Any]) -> dict[str, Any]:
    """Seed 002's workers: they only `sleep infinity` (no sshd, no readiness probe)."""
    converted = copy.deepcopy(body)
    container = converted["spec"]["mpiReplicaSpecs"]["Worker"]["template"]["spec"]["containers"][0]
    container["command"] = ["sleep", "infinity"]
    container.pop("args", None)
    container.pop("readinessProbe", None)
    return converted


def with_exec_agent(body: dict[str, Any]) -> dict[str, Any]:
    converted = copy.deepcopy(body)
    converted["metadata"].setdefault("annotations", {}).update(EXEC)
    return converted


def on_implementation(body: dict[str, Any], implementation: str) -> dict[str, Any]:
    """The same job on another MPI: its pi image and spec.mpiImplementation, nothing else."""
    converted = copy.deepcopy(body)
    converted["spec"]["mpiImplementation"] = implementation
    for replica in converted["spec"]["mpiReplicaSpecs"].values():
        replica["template"]["spec"]["containers"][0]["image"] = PI_IMAGES[implementation]
    return converted


@pytest.mark.parametrize("implementation", ["OpenMPI", "Intel", "MPICH"])
def test_ffffaraways_example_with_sleeping_workers_computes_pi_through_the_exec_agent(
    real_cluster: LocalCluster, ns: str, implementation: str
) -> None:
    body = with_exec_agent(sleeping_workers(yaml.safe_load(FFFFFARAWAY.read_text())))
    if implementation != "OpenMPI":
        body = on_implementation(body, implementation)
    # The example's cleanPodPolicy Running deletes the workers as the job succeeds; kept here, so that the
    # pods that computed pi can be looked at afterwards.
    body["spec"]["runPolicy"]["cleanPodPolicy"] = "None"
    name = body["metadata"]["name"]
    job = Job(real_cluster, ns, name)

    run_to_success(job, body)

    log = launcher_log(real_cluster, ns, name)
    assert_pi_ran_where_the_hostfile_says(real_cluster, ns, name, log, ranks=2)
    assert ranks_by_host(log) == {f"{name}-worker-0": [0], f"{name}-worker-1": [1]}, log
    # The ranks ran in the workers the job made, which only slept: no sshd listened in them.
    workers = {p["metadata"]["name"]: p for p in job.pods("worker")}
    assert sorted(workers) == [f"{name}-worker-0", f"{name}-worker-1"], diagnosis(job)
    for worker in workers.values():
        assert worker["spec"]["containers"][0]["command"] == ["sleep", "infinity"], worker["spec"]
        assert (worker.get("status") or {}).get("phase") == "Running", worker.get("status")


def launcher_sleeps(body: dict[str, Any]) -> dict[str, Any]:
    converted = copy.deepcopy(body)
    container = converted["spec"]["mpiReplicaSpecs"]["Launcher"]["template"]["spec"]["containers"][0]
    container["command"] = ["sleep", "infinity"]
    container.pop("args", None)
    return converted


def small(body: dict[str, Any]) -> dict[str, Any]:
    """The example's pods ask for half a CPU each; two jobs of them do not fit the real node's two."""
    converted = copy.deepcopy(body)
    for replica in converted["spec"]["mpiReplicaSpecs"].values():
        replica["template"]["spec"]["containers"][0]["resources"] = {
            "requests": {"cpu": "50m", "memory": "64Mi"},
            "limits": {"cpu": "1", "memory": "512Mi"},
        }
    return converted


def test_a_launcher_cannot_exec_into_another_jobs_pod(real_cluster: LocalCluster, ns: str) -> None:
    example = small(with_exec_agent(sleeping_workers(yaml.safe_load(FFFFFARAWAY.read_text()))))
    victim = launcher_sleeps(example)
    victim["metadata"]["name"] = "victim"
    Job(real_cluster, ns, "victim").submit(victim)
    wait_for(
        lambda: any(
            p["status"].get("phase") == "Running" for p in Job(real_cluster, ns, "victim").pods("worker")
        ),
        timeout=RUN_TIMEOUT,
        what="the victim's workers running",
    )
    intruder = copy.deepcopy(example)
    intruder["metadata"]["name"] = "intruder"
    container = intruder["spec"]["mpiReplicaSpecs"]["Launcher"]["template"]["spec"]["containers"][0]
    container["command"] = ["sh", "-c"]
    container["args"] = [
        f"{AGENT} intruder-worker-0.intruder echo own-worker-reached; "
        f"{AGENT} victim-worker-0.victim echo victim-reached; echo victim-exit=$?"
    ]
    job = Job(real_cluster, ns, "intruder")

    run_to_success(job, intruder)

    log = real_cluster.kubectl("-n", ns, "logs", "job/intruder-launcher").stdout
    assert "own-worker-reached" in log, f"{log}\n{diagnosis(job)}"
    assert "victim-reached" not in log, log
    assert "victim-exit=1" in log, log
    assert 'cannot get resource "pods" in API group "" in the namespace' in log, log
