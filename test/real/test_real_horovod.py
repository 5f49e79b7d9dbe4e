"""Horovod training that really trains: the Horovod examples, applied as they are, run TensorFlow on the
real node's workers, and the elastic one keeps training while its workers are scaled 2 -> 3 -> 2 -> 3."""

from __future__ import annotations

import itertools
import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from mpioperator.testing.cluster import LocalCluster
from mpioperator.testing.jobs import Job
from mpioperator.testing.operator import OperatorProcess
from mpioperator.testing.ranks import ranks_by_host
from mpioperator.testing.wait import ProbeAborted, WaitTimeout, wait_for, wait_while_progressing
from test.real.progress_column import ProgressColumn
from test.real.test_real_mpijobs import diagnosis, launcher_log

REPO = Path(__file__).resolve().parents[2]
EXAMPLES = REPO / "examples" / "v2beta1"
EPOCH_LOSS = re.compile(r"^epoch (\d+) loss (\d+\.\d+) accuracy", re.MULTILINE)
START_END = re.compile(r"^loss at start (\d+\.\d+), at end (\d+\.\d+)$", re.MULTILINE)
RANK_ENV = re.compile(r"^rank (\d+) env NCCL_DEBUG=(\S+)$", re.MULTILINE)
IMAGES_PER_SEC = re.compile(r"^images/sec: (\d+\.\d+) total on (\d+) ranks", re.MULTILINE)
ELASTIC_EPOCH = re.compile(r"^\[0\]<stdout>:epoch (\d+) step (\d+) size (\d+) loss (\d+\.\d+)$", re.MULTILINE)
ELASTIC_WAITING = re.compile(
    r"^\[0\]<stdout>:waiting for size (\d+) \(now \d+\) before epoch (\d+)$", re.MULTILINE
)
ELASTIC_START_END = re.compile(r"^\[0\]<stdout>:loss at start (\d+\.\d+), at end (\d+\.\d+)$", re.MULTILINE)
# Each change of size waits for the kubelet to refresh the launcher's copy of discover_hosts.sh (its pod
# sync, about a minute) and for a new rank to import TensorFlow on shared cores.
ELASTIC_TIMEOUT = 270.0
# Training on 2 shared cores runs as fast as whatever else the machine does lets it: a run is waited for
# as long as its pods or its launcher's log keep changing, and fails once nothing has moved for this long.
TRAINING_IDLE_TIMEOUT = 240.0
# Rounds of the CPU benchmark in its test: each takes seconds, so PROGRESS moves between log reads.
ROUNDS = 6
TRAINING_LIMIT = 1500.0


@pytest.fixture
def ns(real_cluster: LocalCluster, make_namespace: Any, log_reading_operator: OperatorProcess) -> str:
    """A namespace, under an operator that reads opted-in launchers' logs every second."""
    name: str = make_namespace(real_cluster)
    return name


def apply_example(
    cluster: LocalCluster, namespace: str, relative: str, *, flag: tuple[str, str] | None = None
) -> Job:
    """Applies an example as it is, or with one more flag and its value at the end of its launcher's args."""
    path = EXAMPLES / relative
    name = yaml.safe_load(path.read_text())["metadata"]["name"]
    if flag is None:
        cluster.kubectl("-n", namespace, "apply", "-f", str(path))
    else:
        body = yaml.safe_load(path.read_text())
        body["spec"]["mpiReplicaSpecs"]["Launcher"]["template"]["spec"]["containers"][0]["args"] += list(flag)
        cluster.kubectl("-n", namespace, "apply", "-f", "-", input=yaml.safe_dump(body))
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


def run_example_on_two_workers(
    cluster: LocalCluster,
    namespace: str,
    relative: str,
    progress: list[str] | None = None,
    *,
    flag: tuple[str, str] | None = None,
) -> tuple[Job, str]:
    """Applies an example (with one more launcher flag, if given), trains it to Succeeded and checks it ran
    one rank on each of its two workers; the job and its launcher's log. `progress` gets each PROGRESS value
    `kubectl get -o wide` showed."""
    job = apply_example(cluster, namespace, relative, flag=flag)
    with ProgressColumn(cluster, namespace, job.name) as column:
        train_to_success(job)
    return job, one_rank_on_each_worker(cluster, namespace, job, column, progress)


def one_rank_on_each_worker(
    cluster: LocalCluster, namespace: str, job: Job, column: ProgressColumn, progress: list[str] | None
) -> str:
    """Checks that the finished two-worker job ran one rank on each worker; its launcher's log. Shows the
    PROGRESS column as it moved and the log, for a person reading the run (pytest -rP), and adds the
    column's values to `progress`."""
    print("\n".join(column.shown))
    if progress is not None:
        progress += column.values
    log = launcher_log(cluster, namespace, job.name)
    print(log)
    assert ranks_by_host(log) == {f"{job.name}-worker-0": [0], f"{job.name}-worker-1": [1]}, log
    return log


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
    progress: list[str] = []
    _, log = run_example_on_two_workers(
        real_cluster,
        ns,
        "tensorflow-benchmarks/tensorflow-benchmarks-cpu.yaml",
        progress,
        flag=("--rounds", str(ROUNDS)),
    )

    found = IMAGES_PER_SEC.search(log)
    assert found, log
    assert float(found.group(1)) > 0 and int(found.group(2)) == 2, log
    # mpioperator.io/progress: PROGRESS (rank 0's rounds out of ROUNDS) moved while it ran.
    done = [int(p.split("/")[0]) for p in progress]
    assert len(done) >= 2 and done == sorted(set(done)), progress


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
    """The elastic example's launcher as a person watches it: its log, its pod, discover_hosts.sh inside
    it. Every wait gives up at once if the job ends or its launcher pod is replaced."""

    def __init__(self, job: Job) -> None:
        self.job = job
        self.cluster = job.cluster
        self.launcher_uid = ""

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

    def epochs(self) -> list[tuple[int, int, int, float]]:
        """Rank 0's epoch lines: (epoch, step count, world size, loss)."""
        return [(int(e), int(s), int(n), float(loss)) for e, s, n, loss in ELASTIC_EPOCH.findall(self.log())]

    def waits(self) -> list[tuple[int, int]]:
        """Rank 0's waits for a world size: (size, before epoch). A reset in the middle of a wait (a host
        still in discover_hosts.sh tried again and failing while its pod is away) makes the run wait
        again, and print the same line again: that is one wait, so repeats in a row count once."""
        printed = [(int(size), int(epoch)) for size, epoch in ELASTIC_WAITING.findall(self.log())]
        return [wait for wait, _ in itertools.groupby(printed)]

    def same_launcher(self) -> None:
        """Raises ProbeAborted once the launcher is not the pod it started with: waiting longer cannot help."""
        uid = self.launcher_pod()["metadata"]["uid"]
        if self.launcher_uid and uid != self.launcher_uid:
            raise ProbeAborted(f"the launcher pod was replaced: {self.launcher_uid} -> {uid}")

    def ended(self) -> dict[str, Any] | None:
        return self.job.condition("Succeeded") or self.job.condition("Failed")

    def wait(self, check: Any, what: str) -> Any:
        """Waits for `check` while the job runs on its first launcher pod."""

        def probe() -> Any:
            self.same_launcher()
            seen = check()
            ended = None if seen else self.ended()
            if ended:
                seen = check()  # it may have ended since the first look
                if not seen:
                    raise ProbeAborted(f"{self.job.name} ended: {ended}")
            return seen

        return self._wait(probe, what)

    def wait_to_end(self) -> dict[str, Any]:
        def probe() -> dict[str, Any] | None:
            self.same_launcher()
            return self.ended()

        ended: dict[str, Any] = self._wait(probe, f"{self.job.name} to finish")
        return ended

    def _wait(self, probe: Any, what: str) -> Any:
        try:
            return wait_for(probe, timeout=ELASTIC_TIMEOUT, what=what, interval=1.0)
        except (WaitTimeout, ProbeAborted) as stopped:
            raise AssertionError(f"{stopped}\n{diagnosis(self.job)}") from None

    def scale(self, workers: int, check: bool = True) -> Any:
        """`kubectl scale`, through the CRD's scale subresource."""
        return self.cluster.kubectl(
            "-n", self.job.ns, "scale", f"mpijob/{self.job.name}", f"--replicas={workers}", check=check
        )

    def out_of_bounds(self) -> dict[str, Any] | None:
        return self.job.condition("WorkersOutOfBounds")

    def refused_outside_the_bounds(self, running: int) -> list[str]:
        """Scales above the job's maximum and below the API's minimum of one worker while it runs
        `running` workers: the first runs the maximum with a condition and one Warning event, the second is
        refused by the API server. What a person saw, for the log."""
        seen = []
        above = self.scale(running + 1)
        seen.append(f"$ kubectl scale --replicas={running + 1}: {above.stdout.strip()}")
        clamped = self.wait(self.out_of_bounds, "the WorkersOutOfBounds condition")
        seen.append(f"condition: {clamped}")
        assert clamped["reason"] == "WorkerReplicasClamped", clamped
        assert f"replicas {running + 1} is above mpioperator.io/max-workers {running}" in clamped["message"]
        workers = sorted(p["metadata"]["name"] for p in self.job.pods("worker"))
        assert workers == [f"{self.job.name}-worker-{i}" for i in range(running)], workers

        def events() -> str:
            listed = self.cluster.kubectl(
                "-n", self.job.ns, "get", "events", f"--field-selector=involvedObject.name={self.job.name}"
            )
            return str(listed.stdout)

        self.wait(lambda: "WorkerReplicasClamped" in events(), "the WorkerReplicasClamped event")
        seen.append(events())
        events_seen = seen[-1]
        assert events_seen.count("WorkerReplicasClamped") == 1, events_seen
        zero = self.scale(0, check=False)
        seen.append(f"$ kubectl scale --replicas=0: {zero.stderr.strip()}")
        assert zero.returncode != 0 and "Worker replicas must be greater than or equal to 1" in zero.stderr
        return seen

    def walk_to(self, workers: int, wait_number: int, before_scaling: Any = None) -> None:
        """Waits for the run's `wait_number`-th wait (it asks for `workers`), scales the job to them, and
        waits for an epoch at that size after the wait."""
        self.wait(lambda: len(self.waits()) >= wait_number, f"the run's wait number {wait_number}")
        size, before = self.waits()[wait_number - 1]
        assert size == workers, self.waits()
        if before_scaling is not None:
            before_scaling()
        print(f"$ kubectl scale --replicas={workers}: {self.scale(workers).stdout.strip()}")
        self.wait(
            lambda: any(epoch >= before and n == workers for epoch, _, n, _ in self.epochs()),
            f"epoch {before} on {workers} workers",
        )


def test_elastic_example_trains_on_through_two_three_two_three_workers_and_the_removed_worker_rejoins(
    real_cluster: LocalCluster, ns: str
) -> None:
    """The example walks through the sizes 2, 3, 2, 3 (--world-sizes): before each quarter of its epochs
    it waits until Horovod has reset it to that size, and this test scales the job with `kubectl scale`
    (the CRD's scale subresource) when the run says it waits; scales outside the example's bounds
    (mpioperator.io/min-workers 1, max-workers 3) are clamped or refused meanwhile, so neither side races the kubelet's refresh of discover_hosts.sh. The third worker leaves and
    comes back under the same name; the epoch and step counts carry on across the resets and the loss
    falls, all under one launcher pod that never restarts."""
    job = apply_example(real_cluster, ns, "horovod/tensorflow-digits-elastic.yaml")
    run = ElasticRun(job)
    third = f"{job.name}-worker-2"
    third_host = f"{third}.{job.name}.{ns}.svc"

    run.wait(lambda: run.epochs()[:1], "the first epoch")
    run.launcher_uid = run.launcher_pod()["metadata"]["uid"]
    run.walk_to(3, 1)
    # While the run waits for 2 workers on 3: a scale past the example's mpioperator.io/max-workers (3)
    # runs 3, and one to no worker is refused; then the scale to 2 takes the condition away.
    refused: list[str] = []
    run.walk_to(2, 2, before_scaling=lambda: refused.extend(run.refused_outside_the_bounds(3)))
    print("\n".join(refused))
    assert run.out_of_bounds() is None, run.job.get()
    # The worker's pod is gone at once, its name from the launcher's discover_hosts.sh only once the kubelet
    # refreshes it; coming back before then is the other way to rejoin, so nothing waits for it here.
    run.walk_to(3, 3)
    ended = run.wait_to_end()

    assert ended["type"] == "Succeeded", diagnosis(job)
    log = run.log()
    print(log)  # the launcher's log, for a person reading the run (pytest -rP)
    epochs = run.epochs()
    # Every epoch once, in order, and the step count never goes back: no reset started training over.
    assert [epoch for epoch, _, _, _ in epochs] == list(range(20)), epochs
    steps = [step for _, step, _, _ in epochs]
    assert all(later > earlier for earlier, later in itertools.pairwise(steps)), epochs
    sizes = [n for _, _, n, _ in epochs]
    assert sizes == [2] * 5 + [3] * 5 + [2] * 5 + [3] * 5, epochs
    assert run.waits() == [(3, 5), (2, 10), (3, 15)], run.waits()
    found = ELASTIC_START_END.search(log)
    assert found, log
    start, end = float(found.group(1)), float(found.group(2))
    assert (start, end) == (epochs[0][3], epochs[-1][3]), log
    assert end < start / 2, log
    assert "training complete: 20 epochs" in log and "final size 3" in log, log

    # Horovod's own lines: its driver started a process on the third worker twice (once per time it was
    # added), reset the workers to 3, to 2 after blacklisting the vanished third, and to 3 again.
    assert log.count(f"start worker process: {third_host}[0]") >= 2, log
    # horovodrun forwards each rank's output as it comes, so Horovod's own C++ log may cut into the line,
    # before it or right after the host name ("...-worker-22026-11-28 22:46:18.838034: I ..."); the job's
    # workers are -0 to -2, so the name cannot be the start of another one.
    assert log.count(f"start: rank 2 of 3 on {third}") == 2, log
    assert f"blacklist failing host: {third_host}" in log, log
    resets = [int(size) for size in re.findall(r"reset workers: (\d+)$", log, re.MULTILINE)]
    # A name still in discover_hosts.sh once its blacklisting cools down is tried again and fails again
    # while its pod is away: such tries add a 3 and a 2 between the changes, never change their order.
    first_three = resets.index(3)
    back_to_two = resets.index(2, first_three)
    assert resets[0] == 2 and resets[-1] == 3 and 3 in resets[back_to_two:], resets

    launcher = run.launcher_pod()
    assert launcher["metadata"]["uid"] == run.launcher_uid, launcher["metadata"]
    restarts = [s["restartCount"] for s in launcher["status"]["containerStatuses"]]
    assert restarts == [0], launcher["status"]
    assert not (job.launcher() or {}).get("status", {}).get("failed"), job.launcher()
