"""Horovod training that really trains: the Horovod examples, applied as they are, run TensorFlow on the
real node's workers, and the elastic one keeps training while its workers are scaled 2 -> 3 -> 2."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from mpioperator.testing.cluster import LocalCluster
from mpioperator.testing.jobs import Job
from mpioperator.testing.operator import OperatorProcess
from mpioperator.testing.ranks import ranks_by_host
from mpioperator.testing.wait import WaitTimeout, wait_for, wait_while_progressing
from test.real.test_real_mpijobs import diagnosis, launcher_log

REPO = Path(__file__).resolve().parents[2]
EXAMPLES = REPO / "examples" / "v2beta1"
EPOCH_LOSS = re.compile(r"^epoch (\d+) loss (\d+\.\d+) accuracy", re.MULTILINE)
START_END = re.compile(r"^loss at start (\d+\.\d+), at end (\d+\.\d+)$", re.MULTILINE)
RANK_ENV = re.compile(r"^rank (\d+) env NCCL_DEBUG=(\S+)$", re.MULTILINE)
IMAGES_PER_SEC = re.compile(r"^images/sec: (\d+\.\d+) total on (\d+) ranks", re.MULTILINE)
ELASTIC_EPOCH = re.compile(r"^\[0\]<stdout>:epoch (\d+) size (\d+) loss (\d+\.\d+)$", re.MULTILINE)
ELASTIC_TIMEOUT = 270.0
# Training on 2 shared cores runs as fast as whatever else the machine does lets it: a run is waited for
# as long as its pods or its launcher's log keep changing, and fails once nothing has moved for this long.
TRAINING_IDLE_TIMEOUT = 240.0
TRAINING_LIMIT = 1500.0


@pytest.fixture
def ns(real_cluster: LocalCluster, make_namespace: Any, real_operator: OperatorProcess) -> str:
    name: str = make_namespace(real_cluster)
    return name


def apply_example(cluster: LocalCluster, namespace: str, relative: str) -> Job:
    path = EXAMPLES / relative
    name = yaml.safe_load(path.read_text())["metadata"]["name"]
    cluster.kubectl("-n", namespace, "apply", "-f", str(path))
    return Job(cluster, namespace, name)


def train_to_success(job: Job) -> None:
    """Waits for the job to finish while it makes progress (a pod's phase, a condition, a new log line)
    and checks it Succeeded."""

    def progress() -> tuple[str, str]:
        pods = " ".join(f"{p['metadata']['name']}={p.get('status', {}).get('phase')}" for p in job.pods())
        log = job.cluster.kubectl("-n", job.ns, "logs", f"job/{job.name}-launcher", check=False).stdout
        return pods, log

    try:
        finished = wait_while_progressing(
            lambda: job.condition("Succeeded") or job.condition("Failed"),
            progress,
            idle_timeout=TRAINING_IDLE_TIMEOUT,
            limit=TRAINING_LIMIT,
            what=f"{job.name} to finish",
        )
    except WaitTimeout as timeout:
        raise AssertionError(f"{timeout}\n{diagnosis(job)}") from None
    assert finished is not None
    assert finished["type"] == "Succeeded", f"{job.name} failed: {finished}\n{diagnosis(job)}"


def run_example_on_two_workers(cluster: LocalCluster, namespace: str, relative: str) -> tuple[Job, str]:
    """Applies an example, trains it to Succeeded and checks it ran one rank on each of its two workers;
    the job and its launcher's log."""
    job = apply_example(cluster, namespace, relative)
    train_to_success(job)
    log = launcher_log(cluster, namespace, job.name)
    print(log)  # the launcher's log, for a person reading the run (pytest -rP)
    assert ranks_by_host(log) == {f"{job.name}-worker-0": [0], f"{job.name}-worker-1": [1]}, log
    return job, log


def test_horovod_keras_example_trains_with_one_rank_on_each_worker_and_its_loss_falls(
    real_cluster: LocalCluster, ns: str
) -> None:
    _, log = run_example_on_two_workers(real_cluster, ns, "horovod/tensorflow-digits.yaml")

    epochs = [(int(epoch), float(loss)) for epoch, loss in EPOCH_LOSS.findall(log)]
    assert [epoch for epoch, _ in epochs] == list(range(10)), log
    found = START_END.search(log)
    assert found, log
    start, end = float(found.group(1)), float(found.group(2))
    assert (start, end) == (epochs[0][1], epochs[-1][1]), log
    # Ten epochs of this model take the digits' loss from about 2.0 to about 0.25.
    assert end < start / 2, log


def test_cpu_benchmark_example_prints_the_images_per_second_of_both_ranks(
    real_cluster: LocalCluster, ns: str
) -> None:
    _, log = run_example_on_two_workers(
        real_cluster, ns, "tensorflow-benchmarks/tensorflow-benchmarks-cpu.yaml"
    )

    found = IMAGES_PER_SEC.search(log)
    assert found, log
    assert float(found.group(1)) > 0 and int(found.group(2)) == 2, log


def test_t9k_recipe_example_trains_and_every_rank_sees_the_worker_templates_nccl_debug(
    real_cluster: LocalCluster, ns: str
) -> None:
    job, log = run_example_on_two_workers(real_cluster, ns, "migrating/horovod-from-t9k.yaml")

    launcher_args = job.launcher()["spec"]["template"]["spec"]["containers"][0]["args"]  # type: ignore[index]
    line = " ".join(launcher_args)
    assert "--mca pml ob1" in line and "--mca btl ^openib" in line, line
    assert sorted(RANK_ENV.findall(log)) == [("0", "INFO"), ("1", "INFO")], log
    found = START_END.search(log)
    assert found, log
    # The same ten epochs as the Keras example: the loss at least halves.
    assert float(found.group(2)) < float(found.group(1)) / 2, log


class ElasticRun:
    """The elastic example's launcher as a person watches it: its log, and discover_hosts.sh inside it."""

    def __init__(self, job: Job) -> None:
        self.job = job
        self.cluster = job.cluster

    def log(self) -> str:
        result = self.cluster.kubectl("-n", self.job.ns, "logs", f"job/{self.job.name}-launcher", check=False)
        return result.stdout

    def launcher_pod(self) -> dict[str, Any]:
        pods = self.job.pods("launcher")
        assert len(pods) == 1, [p["metadata"]["name"] for p in pods]
        return pods[0]

    def discovered(self) -> str:
        pod = self.launcher_pod()["metadata"]["name"]
        result = self.cluster.kubectl(
            "-n", self.job.ns, "exec", pod, "--", "/etc/mpi/discover_hosts.sh", check=False
        )
        return result.stdout if result.returncode == 0 else ""

    def sizes(self) -> list[int]:
        return [int(size) for _, size, _ in ELASTIC_EPOCH.findall(self.log())]

    def wait(self, check: Any, what: str) -> Any:
        try:
            return wait_for(check, timeout=ELASTIC_TIMEOUT, what=what)
        except WaitTimeout as timeout:
            raise AssertionError(f"{timeout}\n{diagnosis(self.job)}") from None

    def scale(self, workers: int) -> None:
        self.job.patch({"spec": {"mpiReplicaSpecs": {"Worker": {"replicas": workers}}}})


def test_elastic_example_keeps_training_while_scaled_from_two_to_three_to_two_workers(
    real_cluster: LocalCluster, ns: str
) -> None:
    job = apply_example(real_cluster, ns, "horovod/tensorflow-digits-elastic.yaml")
    run = ElasticRun(job)
    third = f"{job.name}-worker-2.{job.name}.{ns}.svc"

    run.wait(lambda: run.sizes()[:1] == [2], "the first epoch on two workers")
    run.scale(3)
    # The operator lists the new worker once it runs; the kubelet refreshes the launcher's copy.
    run.wait(lambda: third in run.discovered(), f"{third} in the launcher's discover_hosts.sh")
    run.wait(lambda: 3 in run.sizes(), "an epoch on three workers")
    log = run.log()
    assert f"start worker process: {third}[0]" in log, log
    # horovodrun forwards each rank's stdout as it comes: Horovod's own C++ log may cut into the line.
    joined = rf"^\[\d+\]<stdout>:.*start: rank \d of 3 on {job.name}-worker-2$"
    assert re.search(joined, log, re.MULTILINE), log

    run.scale(2)
    run.wait(lambda: third not in run.discovered(), f"{third} gone from the launcher's discover_hosts.sh")
    run.wait(lambda: run.sizes()[-1:] == [2] and 3 in run.sizes(), "an epoch on two workers again")
    run.wait(lambda: job.condition("Succeeded") or job.condition("Failed"), f"{job.name} to finish")

    assert job.condition("Succeeded"), diagnosis(job)
    log = run.log()
    print(log)  # the launcher's log, for a person reading the run (pytest -rP)
    sizes = run.sizes()
    first_three, last_three = sizes.index(3), len(sizes) - 1 - sizes[::-1].index(3)
    assert set(sizes[:first_three]) == {2} and set(sizes[last_three + 1 :]) == {2}, sizes
    assert "training complete: 50 epochs, final size 2" in log, log
    # Horovod's driver dropped the third worker and reset the job to two. Its pod is gone (and its rank
    # with it) before the kubelet refreshes discover_hosts.sh, so the driver learns it as a failing host.
    assert "reset workers: 3" in log and log.rindex("reset workers: 2") > log.index("reset workers: 3"), log
    assert f"blacklist failing host: {third}" in log, log
    epochs = [int(epoch) for epoch, _, _ in ELASTIC_EPOCH.findall(log)]
    assert epochs[-1] == 49, log
    launcher = run.launcher_pod()
    restarts = [s["restartCount"] for s in launcher["status"]["containerStatuses"]]
    assert restarts == [0], launcher["status"]
    assert not (job.launcher() or {}).get("status", {}).get("failed"), job.launcher()
