"""PyTorch and DeepSpeed training that really trains: the examples, applied as they are, run torch from PyPI
on the real node's workers over gloo, one rank per worker, and their loss falls. DeepSpeed runs through
both ways users start it: plain mpirun (Kubeflow's SDK) and DeepSpeed's own launcher."""

from __future__ import annotations

import re
from typing import Any

import pytest

from mpioperator.testing.cluster import LocalCluster
from mpioperator.testing.jobs import Job
from mpioperator.testing.operator import OperatorProcess
from mpioperator.testing.wait import WaitTimeout, wait_for
from test.real.progress_column import ProgressColumn
from test.real.test_real_horovod import apply_example, one_rank_on_each_worker
from test.real.test_real_mpijobs import diagnosis, run_to_success

# The first pull of the images (below) and the training itself, with room on a loaded machine.
pytestmark = pytest.mark.timeout(1500)

EPOCH_LOSS = re.compile(r"^epoch (\d+) loss (\d+\.\d+)$", re.MULTILINE)
START_END = re.compile(r"loss at start (\d+\.\d+), at end (\d+\.\d+)$", re.MULTILINE)
RANK_SETUP = re.compile(
    r"^rank (\d+) world size (\d+) accelerator (\S+) backend (\S+) DS_ACCELERATOR=(\S*)$", re.MULTILINE
)
# DeepSpeed's own lines: mpi4py's rank discovery, and the backend it set up.
DISCOVERED = re.compile(r"Discovered MPI settings of world_rank=(\d+), local_rank=\d+, world_size=(\d+)")
TORCH_BACKEND = "Initializing TorchBackend in DeepSpeed with backend gloo"
# Each node run starts with an empty containerd, so the first pod of these images pulls gigabytes from
# the local registry and unpacks them; that is waited for apart from the training itself.
PULL_TIMEOUT = 900.0


def workers_running(job: Job) -> bool:
    pods = job.pods("worker")
    return len(pods) == 2 and all(pod.get("status", {}).get("phase") == "Running" for pod in pods)


def run_example_on_two_workers(
    cluster: LocalCluster, namespace: str, relative: str, progress: list[str] | None = None
) -> tuple[Job, str]:
    """Applies an example, waits for its workers' image, runs it to Succeeded and checks it ran one rank
    on each of its two workers; the job and its launcher's log."""
    job = apply_example(cluster, namespace, relative)
    try:
        wait_for(lambda: workers_running(job), timeout=PULL_TIMEOUT, what=f"{job.name}'s workers to run")
    except WaitTimeout as timeout:
        raise AssertionError(f"{timeout}\n{diagnosis(job)}") from None
    with ProgressColumn(cluster, namespace, job.name) as column:
        run_to_success(job)
    assert_launcher_ran_once(cluster, namespace, job)
    return job, one_rank_on_each_worker(cluster, namespace, job, column, progress)


def assert_launcher_ran_once(cluster: LocalCluster, namespace: str, job: Job) -> None:
    """Training that succeeded on a retry hides why the first attempt ended: fail with that attempt's log
    and its container's last state, which the Job's retry would otherwise leave unread."""
    pods = job.pods("launcher")
    retried = [
        (pod["metadata"]["name"], status)
        for pod in pods
        for status in pod.get("status", {}).get("containerStatuses", [])
        if status.get("restartCount", 0) > 0
    ]
    if len(pods) == 1 and not retried:
        return
    report = [f"{len(pods)} launcher pods"]
    for name, status in retried:
        previous = cluster.kubectl("-n", namespace, "logs", name, "--previous", check=False)
        report.append(f"{name}: {status.get('lastState')}\nprevious log:\n{previous.stdout}{previous.stderr}")
    events = cluster.kubectl("-n", namespace, "get", "events", "--sort-by=.lastTimestamp", check=False)
    raise AssertionError("the launcher ran more than once\n" + "\n".join(report) + "\n" + events.stdout)


@pytest.fixture
def ns(real_cluster: LocalCluster, make_namespace: Any, log_reading_operator: OperatorProcess) -> str:
    """A namespace, under an operator that reads opted-in launchers' logs every second."""
    name: str = make_namespace(real_cluster)
    return name


def assert_loss_fell_by_half(log: str, epochs: int) -> None:
    losses = [float(loss) for _, loss in EPOCH_LOSS.findall(log)]
    assert [int(epoch) for epoch, _ in EPOCH_LOSS.findall(log)] == list(range(epochs)), log
    found = START_END.search(log)
    assert found, log
    start, end = float(found.group(1)), float(found.group(2))
    assert (start, end) == (losses[0], losses[-1]), log
    # Twenty epochs take the spirals' loss from about 0.67 to below 0.1.
    assert end < start / 2, log


def test_pytorch_ddp_example_trains_on_gloo_with_one_rank_on_each_worker_and_its_loss_falls(
    real_cluster: LocalCluster, ns: str
) -> None:
    progress: list[str] = []
    _, log = run_example_on_two_workers(real_cluster, ns, "pytorch/pytorch-ddp.yaml", progress)

    assert_loss_fell_by_half(log, epochs=20)
    # mpioperator.io/progress: PROGRESS moved through at least two epochs while it trained.
    assert len(progress) >= 2 and [int(p) for p in progress] == sorted({int(p) for p in progress}), progress


@pytest.mark.parametrize("example", ["deepspeed-mpirun.yaml", "deepspeed-launcher.yaml"])
def test_deepspeed_example_trains_zero_stage_1_on_cpu_with_one_rank_on_each_worker(
    real_cluster: LocalCluster, ns: str, example: str
) -> None:
    _, log = run_example_on_two_workers(real_cluster, ns, f"deepspeed/{example}")

    assert sorted(RANK_SETUP.findall(log)) == [
        ("0", "2", "cpu", "gloo", "cpu"),
        ("1", "2", "cpu", "gloo", "cpu"),
    ], log
    assert sorted(DISCOVERED.findall(log)) == [("0", "2"), ("1", "2")], log
    assert TORCH_BACKEND in log, log
    # The shared-memory op came built into the image: no rank compiled it.
    assert "deepspeed_shm_comm_op built successfully" in log, log
    assert "Building extension module" not in log and "ninja" not in log.lower(), log
    assert "zero stage 1: loss at start" in log, log
    assert_loss_fell_by_half(log, epochs=20)
    if example == "deepspeed-launcher.yaml":
        # DeepSpeed's runner read the operator's hostfile and ran Open MPI's mpirun over both workers.
        assert re.search(r"cmd = mpirun -n 2 -hostfile /etc/mpi/hostfile", log), log
