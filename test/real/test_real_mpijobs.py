"""MPI programs that really run: the operator's Service, hostfile, SSH Secret and launcher environment drive
a real mpirun across real pods on the real node (Open MPI, MPICH and Intel MPI)."""

from __future__ import annotations

import re
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from mpioperator.testing.cluster import LocalCluster
from mpioperator.testing.jobs import Job
from mpioperator.testing.mpijobs import OPEN_MPI_5_PI_IMAGE, PI_IMAGES
from mpioperator.testing.operator import OperatorProcess
from mpioperator.testing.ranks import assert_ranks_ran_on_hostfile_hosts, ranks_by_host
from mpioperator.testing.wait import WaitTimeout, wait_for
from test.real.conftest import running_operator

REPO = Path(__file__).resolve().parents[2]
EXAMPLES = REPO / "examples" / "v2beta1" / "pi"
RUN_TIMEOUT = 240.0
PI_LINE = re.compile(r"^pi is approximately (\d\.\d+), error ([0-9.e+-]+), (\d+) ranks", re.MULTILINE)


@pytest.fixture
def ns(real_cluster: LocalCluster, make_namespace: Any, real_operator: OperatorProcess) -> str:
    name: str = make_namespace(real_cluster)
    return name


def launcher_log(cluster: LocalCluster, namespace: str, job: str) -> str:
    """The launcher's log as a user reads it, through the API server and the kubelet."""
    return cluster.kubectl("-n", namespace, "logs", f"job/{job}-launcher").stdout


def assert_computed_pi(log: str, ranks: int) -> None:
    found = PI_LINE.search(log)
    assert found, f"no pi line in the launcher log:\n{log}"
    assert found.group(1).startswith("3.141592"), log
    assert int(found.group(3)) == ranks, log


def assert_pi_ran_where_the_hostfile_says(
    cluster: LocalCluster, namespace: str, job: str, log: str, ranks: int
) -> None:
    """pi computed by `ranks` ranks, each on a host of the job's hostfile: a launcher that ran them all
    itself (an MPI that ignored the operator's settings) computes pi just as well."""
    assert_computed_pi(log, ranks)
    config = cluster.rest.get(f"/api/v1/namespaces/{namespace}/configmaps/{job}-config")
    assert_ranks_ran_on_hostfile_hosts(log, config["data"]["hostfile"], ranks)


def run_to_success(job: Job, body: dict[str, Any] | None = None, timeout: float = RUN_TIMEOUT) -> None:
    if body is not None:
        job.submit(body)
    finished = wait_finished(job, timeout)
    assert finished["type"] == "Succeeded", f"{job.name} failed: {finished}\n{diagnosis(job)}"


def wait_finished(job: Job, timeout: float = RUN_TIMEOUT, more: Callable[[], str] = str) -> dict[str, Any]:
    """The job's Succeeded or Failed condition once it has one; past `timeout`, an AssertionError with the
    job's diagnosis and what `more` adds to it."""
    try:
        found = wait_for(
            lambda: job.condition("Succeeded") or job.condition("Failed"),
            timeout=timeout,
            what=f"{job.name} to finish",
        )
    except WaitTimeout as late:
        raise AssertionError(f"{late}\n{diagnosis(job)}{more()}") from None
    assert found is not None
    return found


def diagnosis(job: Job) -> str:
    """What a person would look at: the job's status, its pods, the launcher's log."""
    cluster = job.cluster
    pods = cluster.kubectl("-n", job.ns, "get", "pods", "-o", "wide", check=False).stdout
    status = (job.get() or {}).get("status")
    log = cluster.kubectl("-n", job.ns, "logs", f"job/{job.name}-launcher", "--tail=40", check=False)
    return f"status: {status}\npods:\n{pods}\nlauncher log:\n{log.stdout}{log.stderr}"


@pytest.mark.parametrize("example", ["pi.yaml", "pi-mpich.yaml", "pi-intel.yaml"])
def test_pi_example_applied_as_it_is_computes_pi_on_both_workers(
    real_cluster: LocalCluster, ns: str, example: str
) -> None:
    path = EXAMPLES / example
    name = yaml.safe_load(path.read_text())["metadata"]["name"]
    real_cluster.kubectl("-n", ns, "apply", "-f", str(path))

    run_to_success(Job(real_cluster, ns, name))

    log = launcher_log(real_cluster, ns, name)
    assert_pi_ran_where_the_hostfile_says(real_cluster, ns, name, log, ranks=2)
    assert ranks_by_host(log) == {f"{name}-worker-0": [0], f"{name}-worker-1": [1]}, log


def pi_job(
    name: str,
    *,
    workers: int,
    ranks: int,
    slots: int = 1,
    implementation: str = "OpenMPI",
    launcher_args: tuple[str, ...] = (),
    image: str | None = None,
    worker_image: str | None = None,
    spec: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """A pi MPIJob for the real node: the example's shape with small CPU requests, so many pods fit."""
    image = image or PI_IMAGES[implementation]
    resources = {"requests": {"cpu": "50m", "memory": "64Mi"}, "limits": {"cpu": "1", "memory": "512Mi"}}
    user = {"runAsUser": 1000}
    sshd = ["/usr/sbin/sshd", "-De", "-f", "/home/mpiuser/.sshd_config"]
    body: dict[str, Any] = {
        "apiVersion": "kubeflow.org/v2beta1",
        "kind": "MPIJob",
        "metadata": {"name": name},
        "spec": {
            "slotsPerWorker": slots,
            "mpiImplementation": implementation,
            "sshAuthMountPath": "/home/mpiuser/.ssh",
            "runPolicy": {"cleanPodPolicy": "Running", "backoffLimit": 0},
            # mpirun starts once every worker's sshd listens, so one launcher attempt is enough.
            "launcherCreationPolicy": "WaitForWorkersReady",
            "mpiReplicaSpecs": {
                "Launcher": {
                    "replicas": 1,
                    "template": {
                        "spec": {
                            "containers": [
                                {
                                    "name": "launcher",
                                    "image": image,
                                    "securityContext": user,
                                    "args": ["mpirun", "-n", str(ranks), "/home/mpiuser/pi", *launcher_args],
                                    "resources": resources,
                                }
                            ]
                        }
                    },
                },
                "Worker": {
                    "replicas": workers,
                    "template": {
                        "spec": {
                            "containers": [
                                {
                                    "name": "worker",
                                    "image": worker_image or image,
                                    "securityContext": user,
                                    "args": sshd,
                                    "readinessProbe": {"tcpSocket": {"port": 2222}, "periodSeconds": 1},
                                    "resources": resources,
                                }
                            ]
                        }
                    },
                },
            },
        },
    }
    body["spec"].update(spec or {})
    return body


def test_open_mpi_5_spreads_its_ranks_over_the_workers(real_cluster: LocalCluster, ns: str) -> None:
    """Open MPI 5's mpirun reads none of upstream's OMPI_MCA_orte_* variables; given only those it runs every
    rank on the launcher and exits 0. The operator's PRTE_MCA_* variables send them to the hostfile."""
    job = Job(real_cluster, ns, "ompi5")

    run_to_success(job, pi_job("ompi5", workers=2, ranks=2, image=OPEN_MPI_5_PI_IMAGE))

    log = launcher_log(real_cluster, ns, "ompi5")
    print(f"launcher log:\n{log}")
    assert_pi_ran_where_the_hostfile_says(real_cluster, ns, "ompi5", log, ranks=2)
    assert ranks_by_host(log) == {"ompi5-worker-0": [0], "ompi5-worker-1": [1]}, log


ENV_LINE = re.compile(r"^env of rank (\d+): NCCL_DEBUG=(\S*) WHO=(\S*)$", re.MULTILINE)


@pytest.mark.parametrize("image", [PI_IMAGES["OpenMPI"], OPEN_MPI_5_PI_IMAGE])
def test_the_worker_templates_environment_reaches_every_rank_and_mpiruns_own_variables_still_win(
    real_cluster: LocalCluster, ns: str, image: str
) -> None:
    """T9k's recipe: NCCL_DEBUG in the worker template, seen by every rank (started by sshd, which gives a
    fresh environment). What mpirun sets for a rank wins over the worker's: `-x WHO=launcher` and the rank
    number itself, which the worker's template sets to a wrong value."""
    name = "wenv-5" if image == OPEN_MPI_5_PI_IMAGE else "wenv-4"
    show = (
        'echo "rank $OMPI_COMM_WORLD_RANK of $OMPI_COMM_WORLD_SIZE on $(hostname)";'
        ' echo "env of rank $OMPI_COMM_WORLD_RANK: NCCL_DEBUG=$NCCL_DEBUG WHO=$WHO"'
    )
    body = pi_job(name, workers=2, ranks=2, image=image)
    launcher = body["spec"]["mpiReplicaSpecs"]["Launcher"]["template"]["spec"]["containers"][0]
    launcher["args"] = ["mpirun", "-n", "2", "-x", "WHO=launcher", "sh", "-c", show]
    worker = body["spec"]["mpiReplicaSpecs"]["Worker"]["template"]["spec"]["containers"][0]
    worker["env"] = [
        {"name": "NCCL_DEBUG", "value": "INFO"},
        {"name": "WHO", "value": "worker"},
        {"name": "OMPI_COMM_WORLD_RANK", "value": "99"},
    ]
    job = Job(real_cluster, ns, name)

    run_to_success(job, body)

    log = launcher_log(real_cluster, ns, name)
    print(f"launcher log:\n{log}")
    config = real_cluster.rest.get(f"/api/v1/namespaces/{ns}/configmaps/{name}-config")
    assert_ranks_ran_on_hostfile_hosts(log, config["data"]["hostfile"], ranks=2)
    assert sorted(ENV_LINE.findall(log)) == [("0", "INFO", "launcher"), ("1", "INFO", "launcher")], log


def test_launcher_runs_as_a_worker_beside_four_workers_of_two_slots_once_they_are_ready(
    real_cluster: LocalCluster, ns: str
) -> None:
    """runLauncherAsWorker, slotsPerWorker 2, WaitForWorkersReady and an sshAuthMountPath of a non-root
    user together: 10 ranks, two on each of the five hosts, the launcher's included."""
    body = pi_job(
        "wide",
        workers=4,
        ranks=10,
        slots=2,
        spec={"runLauncherAsWorker": True},
    )
    # The launcher is one of the hosts mpirun reaches over ssh, so it runs sshd too before mpirun.
    launcher = body["spec"]["mpiReplicaSpecs"]["Launcher"]["template"]["spec"]["containers"][0]
    launcher["args"] = [
        "sh",
        "-c",
        "/usr/sbin/sshd -f /home/mpiuser/.sshd_config && exec mpirun -n 10 /home/mpiuser/pi",
    ]
    job = Job(real_cluster, ns, "wide")

    run_to_success(job, body)

    log = launcher_log(real_cluster, ns, "wide")
    assert_pi_ran_where_the_hostfile_says(real_cluster, ns, "wide", log, ranks=10)
    hosts = ranks_by_host(log)
    assert sorted(hosts) == ["wide-launcher", *(f"wide-worker-{i}" for i in range(4))], log
    assert all(len(ranks) == 2 for ranks in hosts.values()), log


def test_hostfile_with_the_cluster_domain_resolves_and_runs(
    real_cluster: LocalCluster, make_namespace: Any, tmp_path: Path
) -> None:
    """--cluster-domain makes every hostfile entry a fully qualified name, which CoreDNS must answer."""
    with running_operator(real_cluster, tmp_path, "--cluster-domain=cluster.local"):
        ns = make_namespace(real_cluster)
        job = Job(real_cluster, ns, "fqdn")
        run_to_success(job, pi_job("fqdn", workers=2, ranks=2))
        hostfile = real_cluster.rest.get(f"/api/v1/namespaces/{ns}/configmaps/fqdn-config")["data"][
            "hostfile"
        ]
        assert f"fqdn-worker-0.fqdn.{ns}.svc.cluster.local" in hostfile
        assert_pi_ran_where_the_hostfile_says(
            real_cluster, ns, "fqdn", launcher_log(real_cluster, ns, "fqdn"), ranks=2
        )


def test_an_mpi_program_that_exits_3_fails_the_job_with_the_launchers_reason(
    real_cluster: LocalCluster, ns: str
) -> None:
    # The launcher's pod goes as soon as its Job fails (restartPolicy OnFailure, backoffLimit 0), so its
    # exit code is read from a watch that sees every state the pod passed through.
    launcher_pods = PodWatch(real_cluster, ns, "training.kubeflow.org/job-role=launcher")
    job = Job(real_cluster, ns, "exit3").submit(
        pi_job("exit3", workers=2, ranks=2, launcher_args=("--exit-code", "3"))
    )

    failed = job.wait_condition("Failed", timeout=RUN_TIMEOUT)

    assert failed["reason"].startswith("BackoffLimitExceeded"), failed
    assert "backoff limit" in failed["message"], failed
    # The launcher's last words (issue 17), although its pod is gone by the time the Job has failed.
    assert "launcher exit3-launcher-" in failed["message"] and "exit code 3" in failed["message"], failed
    assert job.condition("Succeeded") is None
    assert wait_for(
        lambda: 3 in launcher_pods.exit_codes(), timeout=30, what="the launcher's exit code 3 in its pod"
    )


def test_active_deadline_ends_a_running_mpi_program_with_upstreams_reason_and_cleans_up(
    real_cluster: LocalCluster, ns: str
) -> None:
    """runPolicy.activeDeadlineSeconds is the launcher Job's: the Job controller ends the mpirun still
    running and fails the Job with DeadlineExceeded, which the MPIJob's Failed condition carries, as
    upstream's does; cleanPodPolicy Running then deletes the workers."""
    run_policy = {"cleanPodPolicy": "Running", "backoffLimit": 0, "activeDeadlineSeconds": 60}
    # pi over 10^15 intervals runs for days; a tenth of a CPU per rank keeps it from loading the machine.
    body = pi_job(
        "deadline",
        workers=2,
        ranks=2,
        launcher_args=("--intervals", str(10**15)),
        spec={"runPolicy": run_policy},
    )
    worker = body["spec"]["mpiReplicaSpecs"]["Worker"]["template"]["spec"]["containers"][0]
    worker["resources"] = {
        "requests": {"cpu": "50m", "memory": "64Mi"},
        "limits": {"cpu": "100m", "memory": "512Mi"},
    }
    job = Job(real_cluster, ns, "deadline").submit(body)

    # Both ranks print their host once MPI_Init returns: the program is running on the workers.
    wait_for(
        lambda: len(ranks_by_host(launcher_log(real_cluster, ns, "deadline"))) == 2,
        timeout=RUN_TIMEOUT,
        what="both of pi's ranks running",
    )
    log = launcher_log(real_cluster, ns, "deadline")
    print(f"launcher log while pi runs:\n{log}")
    assert ranks_by_host(log) == {"deadline-worker-0": [0], "deadline-worker-1": [1]}, log
    assert job.condition("Failed") is None, "the deadline is not yet reached while both ranks run"

    failed = job.wait_condition("Failed", timeout=RUN_TIMEOUT)

    print(f"Failed condition: {failed}")
    assert failed["reason"] == "DeadlineExceeded", failed
    assert failed["message"] == "Job was active longer than specified deadline", failed
    assert job.condition("Succeeded") is None
    # Gone from the API server, not only being deleted: the kubelet has stopped every container.
    selector = "training.kubeflow.org/job-name=deadline"
    wait_for(
        lambda: (
            real_cluster.rest.get(f"/api/v1/namespaces/{ns}/pods?labelSelector={selector}")["items"] == []
        ),
        timeout=RUN_TIMEOUT,
        what="the launcher's and workers' pods gone",
    )
    print(real_cluster.kubectl("-n", ns, "get", "mpijob,jobs,pods").stdout)


class PodWatch:
    """Every version of the matching pods, collected by a watch on a background thread."""

    def __init__(self, cluster: LocalCluster, namespace: str, selector: str) -> None:
        self.seen: list[dict[str, Any]] = []
        path = f"/api/v1/namespaces/{namespace}/pods?watch=1&labelSelector={selector}&timeoutSeconds=300"

        def follow() -> None:
            for event in cluster.rest.watch(path, timeout=310):
                self.seen.append(event["object"])

        threading.Thread(target=follow, daemon=True).start()

    def exit_codes(self) -> set[int]:
        codes = set()
        for pod in list(self.seen):
            for status in (pod.get("status") or {}).get("containerStatuses") or ():
                for state in (status.get("state") or {}, status.get("lastState") or {}):
                    if "terminated" in state:
                        codes.add(int(state["terminated"]["exitCode"]))
        return codes


def test_a_worker_image_that_does_not_exist_shows_the_pull_error_on_the_mpijob(
    real_cluster: LocalCluster, ns: str
) -> None:
    """The kubelet's pull error, read off the MPIJob alone (issue 17): no need to look at its pods."""
    job = Job(real_cluster, ns, "noimage").submit(
        pi_job("noimage", workers=1, ranks=1, worker_image="mpioperator/no-such-image:v1")
    )

    stuck = job.wait_condition("PodsStuck", timeout=RUN_TIMEOUT)

    assert stuck["reason"] in ("ErrImagePull", "ImagePullBackOff"), stuck
    assert "noimage-worker-0" in stuck["message"] and "no-such-image" in stuck["message"], stuck
    status = (job.get() or {}).get("status") or {}
    assert status.get("phase") == "Pending"
    assert [(p["name"], p["replicaType"]) for p in status["unhealthyPods"]] == [
        ("noimage-worker-0", "Worker")
    ]
    assert job.condition("Running") is None and job.condition("Failed") is None
