"""A worker lost with its node, or evicted, under a job without a restart policy (decisions-local L51),
decided by one sync against in-memory caches: the job's status names the pods and their nodes."""

from __future__ import annotations

from mpioperator.api.extensions import restarts
from mpioperator.api.objects import Obj
from test.unit.controller.sync_fixtures import (
    NOW,
    Scene,
    job,
    job_children,
    launcher,
    running_job,
    running_scene,
    worker,
)

TAINT_MANAGER = ("DeletionByTaintManager", "Taint manager: deleting due to NoExecute taint")
EVICTION = ("EvictionByEvictionAPI", "Eviction API: evicting")


def _on(pod: Obj, node: str) -> Obj:
    pod.setdefault("spec", {})["nodeName"] = node
    return pod


def _disrupted(pod: Obj, why: tuple[str, str]) -> Obj:
    """The pod as the taint manager or the eviction API leaves it: marked, then deleted (Terminating)."""
    reason, message = why
    pod["metadata"]["deletionTimestamp"] = NOW
    pod["status"]["conditions"] = [
        *pod["status"]["conditions"],
        {"type": "DisruptionTarget", "status": "True", "reason": reason, "message": message},
    ]
    return pod


def _condition(status: Obj, cond_type: str) -> Obj | None:
    return next((c for c in status.get("conditions") or () if c["type"] == cond_type), None)


def _losing_worker_1(why: tuple[str, str]) -> Scene:
    """A running job whose worker 1, on node-c, the taint manager or the eviction API (`why`) is taking;
    worker 0 runs on node-b."""
    pi = running_job()
    disrupted = _disrupted(_on(worker(pi, 1), "node-c"), why)
    return running_scene(pi, _on(worker(pi, 0), "node-b"), disrupted)


async def test_a_worker_the_taint_manager_deleted_fails_a_job_without_a_policy_naming_node_and_pod() -> None:
    scene = _losing_worker_1(TAINT_MANAGER)

    await scene.sync()

    status = scene.written_status()
    failed = _condition(status, "Failed")
    assert failed is not None and failed["status"] == "True", status.get("conditions")
    assert failed["reason"] == "MPIJobWorkerLost"
    assert "pi-worker-1" in failed["message"] and "node-c" in failed["message"], failed
    assert "pi-worker-0" not in failed["message"] and "node-b" not in failed["message"], failed
    assert status.get("completionTime"), status
    assert status["phase"] == "Failed"
    running = _condition(status, "Running")
    assert running is not None and running["status"] == "False"
    assert ("Warning", "MPIJobWorkerLost", failed["message"]) in scene.recorder.events
    # Nothing of the job is made again for the lost worker.
    assert not [call for call in scene.writer.calls if call[0] == "create"], scene.writer.calls


async def test_an_evicted_worker_does_not_fail_a_job_without_a_restart_policy_by_itself() -> None:
    """As upstream: the launcher may still retry with the worker made again, or an elastic job go on."""
    scene = _losing_worker_1(EVICTION)

    await scene.sync()

    status = scene.written_status()
    assert _condition(status, "Failed") is None, status.get("conditions")
    lost = _condition(status, "WorkerLost")
    assert lost is not None and lost["status"] == "True", status.get("conditions")
    assert lost["reason"] == "EvictionByEvictionAPI"
    assert "worker pi-worker-1 on node node-c was evicted" in lost["message"], lost


async def test_a_job_that_fails_after_a_worker_was_evicted_names_the_worker_and_its_node_in_failed() -> None:
    pi = running_job()
    evicted = _disrupted(_on(worker(pi, 1), "node-c"), EVICTION)
    first = running_scene(pi, _on(worker(pi, 0), "node-b"), evicted)
    await first.sync()
    # Later: the evicted pod is gone and made again (upstream), and mpirun, short of its rank, failed.
    after = job(workers=2, status=first.written_status())
    the_launcher = launcher(after, "Failed")
    the_launcher["status"]["conditions"][0].update(
        reason="BackoffLimitExceeded", message="Job has reached the specified backoff limit"
    )
    workers = [_on(worker(after, 0), "node-b"), _on(worker(after, 1), "node-b")]
    scene = Scene(after, *job_children(after, *workers, the_launcher=the_launcher, launcher_phase="Failed"))

    await scene.sync()

    failed = _condition(scene.written_status(), "Failed")
    assert failed is not None and failed["status"] == "True"
    assert "worker pi-worker-1 on node node-c was evicted" in failed["message"], failed


async def test_a_job_with_a_restart_policy_restarts_for_a_worker_lost_with_its_node_instead() -> None:
    pi = running_job()
    pi["metadata"]["annotations"] = {restarts.RESTART_POLICY: restarts.ON_WORKER_FAILURE}
    lost = _disrupted(_on(worker(pi, 1), "node-c"), TAINT_MANAGER)
    scene = running_scene(pi, _on(worker(pi, 0), "node-b"), lost)

    await scene.sync()

    status = scene.written_status()
    assert _condition(status, "Failed") is None, status.get("conditions")
    assert status["restarts"] == 1
