"""Whole-job restarts on the real node: a training-like program that checkpoints to a volume loses a
worker, the operator starts the job again as a whole, and the new attempt resumes from the checkpoint."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from mpioperator.api.extensions import restarts
from mpioperator.api.extensions.launch import WAIT_FOR_SSH_PORT
from mpioperator.testing.cluster import LocalCluster
from mpioperator.testing.jobs import Job
from mpioperator.testing.operator import OperatorProcess
from mpioperator.testing.wait import wait_for
from test.real.test_real_mpijobs import (
    RUN_TIMEOUT,
    assert_computed_pi,
    diagnosis,
    launcher_log,
    pi_job,
    wait_finished,
)

STEPS = 6
# The training-like program: one mpirun per step, the step reached written to the volume after each, and
# a line per attempt saying where it started. The volume is a hostPath under the test's tmp dir, since an
# emptyDir goes with the pod a restart deletes.
TRAIN = f"""
set -eu
step=$(cat /ckpt/step 2>/dev/null || echo 0)
echo "start $step" >> /ckpt/history
while [ "$step" -lt {STEPS} ]; do
  mpirun -n 2 /home/mpiuser/pi
  step=$((step + 1))
  echo "$step" > /ckpt/step.new && mv /ckpt/step.new /ckpt/step
  sleep 2
done
echo "done $step" >> /ckpt/history
"""


@pytest.fixture
def ns(real_cluster: LocalCluster, make_namespace: Any, real_operator: OperatorProcess) -> str:
    name: str = make_namespace(real_cluster)
    return name


def _restartable(body: dict[str, Any], max_restarts: int) -> dict[str, Any]:
    body["metadata"]["annotations"] = {
        # Or the launcher's: a killed worker ends mpirun too, and either may be seen first.
        restarts.RESTART_POLICY: restarts.ON_FAILURE,
        restarts.MAX_RESTARTS: str(max_restarts),
        restarts.RESTART_BACKOFF: "1",
    }
    return body


def _checkpointing(name: str, volume: Path) -> dict[str, Any]:
    body = pi_job(name, workers=2, ranks=2)
    launcher = body["spec"]["mpiReplicaSpecs"]["Launcher"]["template"]["spec"]
    launcher["containers"][0]["args"] = ["sh", "-c", TRAIN]
    launcher["containers"][0]["volumeMounts"] = [{"name": "ckpt", "mountPath": "/ckpt"}]
    launcher["volumes"] = [{"name": "ckpt", "hostPath": {"path": str(volume), "type": "Directory"}}]
    return _restartable(body, max_restarts=2)


def _finished(job: Job, operator: OperatorProcess, timeout: float) -> dict[str, Any]:
    return wait_finished(job, timeout, lambda: f"\noperator:\n{operator.log_tail(80)}")


def _step(volume: Path) -> int:
    text = (volume / "step").read_text().strip() if (volume / "step").exists() else ""
    return int(text) if text else 0


def test_a_job_that_loses_a_worker_restarts_as_a_whole_and_resumes_from_its_checkpoint(
    real_cluster: LocalCluster, ns: str, tmp_path: Path, real_operator: OperatorProcess
) -> None:
    volume = tmp_path / "ckpt"
    volume.mkdir()
    volume.chmod(0o777)  # the launcher runs as uid 1000
    job = Job(real_cluster, ns, "ckpt").submit(_checkpointing("ckpt", volume))
    wait_for(lambda: _step(volume) >= 2, timeout=RUN_TIMEOUT, what="two steps checkpointed")
    first_workers = {
        p["metadata"]["uid"]
        for p in real_cluster.rest.get(
            f"/api/v1/namespaces/{ns}/pods?labelSelector=training.kubeflow.org/job-role=worker"
        )["items"]
    }

    # The worker's sshd (its pid 1) is killed: the container ends, the pod fails (restartPolicy Never).
    real_cluster.kubectl("-n", ns, "exec", "ckpt-worker-1", "--", "kill", "1")

    finished = _finished(job, real_operator, RUN_TIMEOUT)
    assert finished is not None and finished["type"] == "Succeeded", f"{finished}\n{diagnosis(job)}"
    status = (job.get() or {})["status"]
    assert status["restarts"] == 1, diagnosis(job)
    history = (volume / "history").read_text().split("\n")
    starts = [int(line.split()[1]) for line in history if line.startswith("start ")]
    assert len(starts) == 2 and starts[0] == 0 and starts[1] >= 2, history
    assert f"done {STEPS}" in history, history
    assert _step(volume) == STEPS
    workers = real_cluster.rest.get(
        f"/api/v1/namespaces/{ns}/pods?labelSelector=training.kubeflow.org/job-role=worker"
    )["items"]
    assert workers and not {p["metadata"]["uid"] for p in workers} & first_workers
    assert all(p["metadata"]["labels"][restarts.ATTEMPT_LABEL] == "1" for p in workers)
    assert_computed_pi(launcher_log(real_cluster, ns, "ckpt"), ranks=2)
    events = real_cluster.rest.get(f"/api/v1/namespaces/{ns}/events")["items"]
    restarting = [e for e in events if e["reason"] == "MPIJobRestarting"]
    assert len(restarting) == 1, restarting
    assert "restart 1 of at most 2" in restarting[0]["message"]


def test_a_job_that_fails_once_more_than_it_may_restart_ends_failed_with_the_last_attempts_reason(
    real_cluster: LocalCluster, ns: str, real_operator: OperatorProcess
) -> None:
    body = _restartable(pi_job("fails", workers=2, ranks=2, launcher_args=("--exit-code", "3")), 1)
    job = Job(real_cluster, ns, "fails").submit(body)

    failed = _finished(job, real_operator, 2 * RUN_TIMEOUT)
    assert failed["type"] == "Failed", diagnosis(job)

    status = (job.get() or {})["status"]
    assert status["restarts"] == 1, diagnosis(job)
    assert failed["reason"].startswith("BackoffLimitExceeded"), failed
    assert "launcher fails-launcher-" in failed["message"] and "exit code 3" in failed["message"], failed
    assert "restarted 1 times, the most mpioperator.io/max-restarts allows" in failed["message"], failed
    events = real_cluster.rest.get(f"/api/v1/namespaces/{ns}/events")["items"]
    assert [e["reason"] for e in events].count("MPIJobRestarting") == 1


def test_a_running_job_whose_worker_template_is_edited_restarts_and_succeeds_on_the_new_template(
    real_cluster: LocalCluster, ns: str, tmp_path: Path, real_operator: OperatorProcess
) -> None:
    """FFFFFaraway's habit (editing the worker template of a running job) with the roll annotation and
    whole-job restarts: the ranks of the first attempt wait for a file only the edited template mounts, so
    the job can succeed only on pods made from the new template."""
    flag = tmp_path / "flag"
    flag.mkdir()
    (flag / "go").write_text("go\n")
    flag.chmod(0o755)
    wait_then_pi = "while [ ! -e /flag/go ]; do sleep 1; done; exec /home/mpiuser/pi"
    body = pi_job("edit", workers=2, ranks=2)
    body["spec"]["mpiReplicaSpecs"]["Launcher"]["template"]["spec"]["containers"][0]["args"] = [
        *("mpirun", "-n", "2", "sh", "-c", wait_then_pi)
    ]
    # No retry in place: a launcher of the new attempt that failed (a worker name still resolving to the
    # old attempt's pod, sshd not up yet) would fail the job here instead of being hidden by a retry. The
    # launcher waits for its hosts, so it starts only once the new attempt's workers answer.
    body["spec"]["runPolicy"]["backoffLimit"] = 0
    body["metadata"]["annotations"] = {
        WAIT_FOR_SSH_PORT: "2222",
        "mpioperator.io/roll-workers-on-template-change": "true",
        restarts.RESTART_POLICY: restarts.ON_WORKER_FAILURE,
        restarts.MAX_RESTARTS: "1",
        restarts.RESTART_BACKOFF: "1",
    }
    job = Job(real_cluster, ns, "edit").submit(body)
    job.wait_condition("Running", timeout=RUN_TIMEOUT)
    assert job.condition("Succeeded") is None

    worker = body["spec"]["mpiReplicaSpecs"]["Worker"]["template"]["spec"]
    worker["containers"][0]["volumeMounts"] = [{"name": "flag", "mountPath": "/flag", "readOnly": True}]
    worker["volumes"] = [{"name": "flag", "hostPath": {"path": str(flag), "type": "Directory"}}]
    job.patch({"spec": {"mpiReplicaSpecs": {"Worker": {"template": {"spec": worker}}}}})

    finished = _finished(job, real_operator, 2 * RUN_TIMEOUT)
    assert finished["type"] == "Succeeded", f"{finished}\n{diagnosis(job)}"
    assert (job.get() or {})["status"]["restarts"] == 1, diagnosis(job)
    assert_computed_pi(launcher_log(real_cluster, ns, "edit"), ranks=2)
    events = real_cluster.rest.get(f"/api/v1/namespaces/{ns}/events")["items"]
    restarting = [e["message"] for e in events if e["reason"] == "MPIJobRestarting"]
    assert restarting == [
        f"MPIJob {ns}/edit restarts as a whole (restart 1 of at most 1): the worker template changed"
    ], restarting
