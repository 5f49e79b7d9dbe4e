"""The cluster check every platform team runs first, mpi4py's allreduce, as the reference that the
operator's launcher settings reach the workers: for Open MPI 4 and 5, MPICH and Intel MPI, over ssh and
through the exec agent, with and without runLauncherAsWorker. Every rank must run on the host the hostfile
gives it, get the right sum, and have loaded the image's MPI (family and major version).

The jobs run on one operator for the module (with --exec-agent, which serves ssh jobs as before), four at a
time: the first test of each (agent, runLauncherAsWorker) pair submits the four MPIs' jobs, and each test
waits for its own. Their pods stay until the test has compared the ranks' hosts with them, then go with
the job.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
import yaml

from mpioperator.testing.cluster import LocalCluster
from mpioperator.testing.jobs import Job
from mpioperator.testing.mpi4py_check import IMAGES, PYTHON, SCRIPT, CheckImage, check_problems
from mpioperator.testing.operator import OperatorProcess
from test.real.conftest import running_operator
from test.real.test_real_exec_agent import EXEC, exec_rbac_documents
from test.real.test_real_mpijobs import launcher_log, run_to_success

WORKERS = 2
SMALL = {"requests": {"cpu": "10m", "memory": "32Mi"}, "limits": {"cpu": "1", "memory": "512Mi"}}
SSHD = ["/usr/sbin/sshd", "-De", "-f", "/home/mpiuser/.sshd_config"]
AGENTS = ("ssh", "exec")
# Open MPI 5 past 64 hosts: PRRTE would spawn its daemons as a tree there (routed radix 64).
MANY = 65
# 66 pods started on 2 shared cores, then 65 daemons started over ssh one by one.
MANY_TIMEOUT = 600.0


def job_name(mpi: str, agent: str, as_worker: bool) -> str:
    return f"{mpi}-{agent}{'-law' if as_worker else ''}"


def check_job(
    name: str, image: CheckImage, *, agent: str, as_worker: bool, workers: int = WORKERS, probe: bool = True
) -> dict[str, Any]:
    """The check as a user writes it: mpirun over the hostfile's ranks, nothing MPI-specific but the image
    and mpiImplementation. The launcher never runs sshd, also under runLauncherAsWorker: its own ranks are
    mpirun's to start locally."""
    ranks = workers + (1 if as_worker else 0)
    user = {"runAsUser": 1000}
    launcher = {
        "name": "launcher",
        "image": image.image,
        "securityContext": user,
        "args": ["mpirun", "-n", str(ranks), PYTHON, SCRIPT],
        "resources": SMALL,
    }
    if as_worker and agent == "ssh" and image.implementation == "Intel":
        # Intel MPI's Hydra ssh-es to the launcher's own hostfile entry too (MPICH's starts it locally).
        launcher["args"] = [
            "sh",
            "-c",
            f"/usr/sbin/sshd -f /home/mpiuser/.sshd_config && exec mpirun -n {ranks} {PYTHON} {SCRIPT}",
        ]
    worker: dict[str, Any] = {
        "name": "worker",
        "image": image.image,
        "securityContext": user,
        "resources": SMALL,
    }
    if agent == "exec":
        worker["command"] = ["sleep", "infinity"]
    else:
        worker["args"] = SSHD
        if probe:
            worker["readinessProbe"] = {"tcpSocket": {"port": 2222}, "periodSeconds": 1}
    body: dict[str, Any] = {
        "apiVersion": "kubeflow.org/v2beta1",
        "kind": "MPIJob",
        "metadata": {"name": name, "annotations": dict(EXEC) if agent == "exec" else {}},
        "spec": {
            "slotsPerWorker": 1,
            "mpiImplementation": image.implementation,
            "sshAuthMountPath": "/home/mpiuser/.ssh",
            "runLauncherAsWorker": as_worker,
            # The workers stay until the test has read their hostnames; the test then deletes the job.
            "runPolicy": {"cleanPodPolicy": "None", "backoffLimit": 0},
            "launcherCreationPolicy": "WaitForWorkersReady",
            "mpiReplicaSpecs": {
                "Launcher": {"replicas": 1, "template": {"spec": {"containers": [launcher]}}},
                "Worker": {"replicas": workers, "template": {"spec": {"containers": [worker]}}},
            },
        },
    }
    return body


MATRIX = [(mpi, agent, as_worker) for as_worker in (False, True) for agent in AGENTS for mpi in IMAGES]


@pytest.fixture(scope="module")
def check_operator(
    real_cluster: LocalCluster, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[OperatorProcess]:
    """One operator for the module, as the exec-agent overlay runs it (its RBAC, --exec-agent)."""
    documents = exec_rbac_documents(real_cluster)
    real_cluster.kubectl("apply", "--server-side", "-f", "-", input=yaml.safe_dump_all(documents))
    try:
        with running_operator(
            real_cluster, tmp_path_factory.mktemp("mpi4py-operator"), "--exec-agent"
        ) as proc:
            yield proc
    finally:
        for doc in documents:
            real_cluster.kubectl("delete", doc["kind"].lower(), doc["metadata"]["name"], "--ignore-not-found")


@pytest.fixture(scope="module")
def check_namespace(real_cluster: LocalCluster, check_operator: OperatorProcess) -> Iterator[str]:
    """The matrix's namespace."""
    name = "mpi4py-check"
    real_cluster.rest.create("/api/v1/namespaces", {"metadata": {"name": name}})
    try:
        yield name
    finally:
        real_cluster.kubectl("delete", "namespace", name, "--wait=false", check=False)


def submit_group(cluster: LocalCluster, namespace: str, agent: str, as_worker: bool) -> None:
    """The four MPIs' jobs of one (agent, runLauncherAsWorker) pair, unless already submitted."""
    for mpi, image in IMAGES.items():
        name = job_name(mpi, agent, as_worker)
        if Job(cluster, namespace, name).get() is None:
            body = check_job(name, image, agent=agent, as_worker=as_worker)
            Job(cluster, namespace, name).submit(body)


def assert_check_passed(cluster: LocalCluster, namespace: str, name: str, image: CheckImage) -> str:
    log = launcher_log(cluster, namespace, name)
    print(f"launcher log of {name}:\n{log}")
    hostfile = cluster.rest.get(f"/api/v1/namespaces/{namespace}/configmaps/{name}-config")["data"][
        "hostfile"
    ]
    assert not check_problems(log, hostfile, image), f"{check_problems(log, hostfile, image)}\n{log}"
    # The processor names are the job's own pods' hostnames, and no two ranks share one.
    pods = cluster.rest.get(
        f"/api/v1/namespaces/{namespace}/pods?labelSelector=training.kubeflow.org/job-name={name}"
    )["items"]
    hostnames = {pod["spec"].get("hostname") for pod in pods}
    ran_on = [
        line.split(" on ", 1)[1] for line in log.splitlines() if line.startswith("rank ") and " on " in line
    ]
    assert len(set(ran_on)) == len(ran_on) and set(ran_on) <= hostnames, (ran_on, hostnames, log)
    return log


@pytest.mark.parametrize(("mpi", "agent", "as_worker"), MATRIX, ids=[job_name(*row) for row in MATRIX])
def test_mpi4py_allreduce_runs_each_rank_on_its_hostfile_host_with_the_images_mpi(
    real_cluster: LocalCluster, check_namespace: str, mpi: str, agent: str, as_worker: bool
) -> None:
    name = job_name(mpi, agent, as_worker)
    submit_group(real_cluster, check_namespace, agent, as_worker)
    job = Job(real_cluster, check_namespace, name)

    run_to_success(job)

    assert_check_passed(real_cluster, check_namespace, name, IMAGES[mpi])
    real_cluster.rest.delete(job.path)


def test_open_mpi_5_past_64_hosts_starts_a_rank_on_each_of_65_workers(
    real_cluster: LocalCluster, make_namespace: Any, check_operator: OperatorProcess
) -> None:
    """PRRTE spawns its daemons as a tree past 64 hosts, forwarding the ssh arguments cut at `=`; the
    operator has the launcher start every daemon itself. sshd is light: 65 workers fit the real node."""
    namespace = make_namespace(real_cluster)
    # No readiness probe: each probe of sshd's port has sshd fork and re-exec a child, and 65 of them a
    # second kept the 2 cores busy (load average past 1000); ssh's ConnectionAttempts waits for sshd.
    body = check_job("many", IMAGES["openmpi5"], agent="ssh", as_worker=False, workers=MANY, probe=False)
    job = Job(real_cluster, namespace, "many")

    run_to_success(job, body, timeout=MANY_TIMEOUT)

    log = assert_check_passed(real_cluster, namespace, "many", IMAGES["openmpi5"])
    assert f"allreduce of rank {MANY - 1}: {MANY * (MANY + 1) // 2}" in log, log


# Long enough that Hydra's proxies, started through the exec agent within a second, would call before it.
LATE_NAME_SECONDS = 8


def test_a_hydra_launcher_whose_name_resolves_late_starts_mpirun_once_the_workers_can_reach_it(
    real_cluster: LocalCluster, check_namespace: str
) -> None:
    """The workers' Hydra proxies call the launcher back by its hostname, which resolves only once the
    launcher pod is Ready and in the Service's EndpointSlice; under load that comes seconds after its
    container starts. A readiness probe's initial delay makes it late on purpose: the image's entrypoint
    waits for the name in DNS (its own /etc/hosts knows it at once), so mpirun's proxies find it."""
    name = "mpich-late-name"
    body = check_job(name, IMAGES["mpich"], agent="exec", as_worker=False)
    launcher = body["spec"]["mpiReplicaSpecs"]["Launcher"]["template"]["spec"]["containers"][0]
    launcher["readinessProbe"] = {
        "exec": {"command": ["true"]},
        "initialDelaySeconds": LATE_NAME_SECONDS,
        "periodSeconds": 1,
    }
    job = Job(real_cluster, check_namespace, name)

    run_to_success(job, body)

    assert_check_passed(real_cluster, check_namespace, name, IMAGES["mpich"])
    real_cluster.rest.delete(job.path)


IP_HOSTFILE = "mpioperator.io/hostfile-addresses"


def ip_job_name(mpi: str) -> str:
    return f"{mpi}-ip"


def submit_ip_group(cluster: LocalCluster, namespace: str) -> None:
    """The four MPIs' jobs with a hostfile of pod IPs, unless already submitted."""
    for mpi, image in IMAGES.items():
        name = ip_job_name(mpi)
        if Job(cluster, namespace, name).get() is None:
            body = check_job(name, image, agent="ssh", as_worker=False)
            body["metadata"]["annotations"][IP_HOSTFILE] = "ip"
            Job(cluster, namespace, name).submit(body)


def by_pod_name(hostfile: str, ip_to_pod: dict[str, str]) -> str:
    """The hostfile with each IP replaced by its pod's name, as the check compares ranks with hosts."""
    lines = []
    for line in hostfile.splitlines():
        # Open MPI's `ADDRESS slots=N`, Hydra's `ADDRESS:N`
        address, separator, rest = line.partition(" ") if " " in line else line.rpartition(":")
        assert address in ip_to_pod, f"{address!r} is not a worker's pod IP: {ip_to_pod}"
        lines.append(f"{ip_to_pod[address]}{separator}{rest}")
    return "\n".join(lines) + "\n"


@pytest.mark.parametrize("mpi", list(IMAGES))
def test_a_hostfile_of_pod_ips_runs_each_rank_on_its_workers_address_with_the_images_mpi(
    real_cluster: LocalCluster, check_namespace: str, mpi: str
) -> None:
    name = ip_job_name(mpi)
    submit_ip_group(real_cluster, check_namespace)
    job = Job(real_cluster, check_namespace, name)

    run_to_success(job)

    log = launcher_log(real_cluster, check_namespace, name)
    print(f"launcher log of {name}:\n{log}")
    hostfile = real_cluster.rest.get(f"/api/v1/namespaces/{check_namespace}/configmaps/{name}-config")[
        "data"
    ]["hostfile"]
    workers = job.pods("worker")
    ip_to_pod = {p["status"]["podIP"]: p["metadata"]["name"] for p in workers}
    assert len(ip_to_pod) == WORKERS, workers
    named = by_pod_name(hostfile, ip_to_pod)
    problems = check_problems(log, named, IMAGES[mpi])
    assert not problems, f"{problems}\nhostfile:\n{hostfile}\n{log}"
    real_cluster.rest.delete(job.path)
