"""After an MPIJob has finished, nothing is created again and a further sync writes nothing.

The controller runs in-process against a real API server; the test plays kubelet and, through
`LauncherJobController`, the Job controller, which replaces a deleted launcher pod of a Job that is
neither finished nor suspended, exactly what made deleting the pod (not stopping the Job) loop.
"""

from __future__ import annotations

import time
from typing import Any

import pytest

from mpioperator.api.objects import Obj
from mpioperator.testing.cluster import LocalCluster
from mpioperator.testing.mpijobs import mpijob
from mpioperator.testing.wait import async_wait_for
from test.integration.controller.actors import Actors, LauncherJobController
from test.integration.controller.conftest import Harness
from test.integration.controller.test_upstream_sync_scenarios import ALL, Scene, _ago, informers_only

JOB = "end"
OUTCOMES = ("succeeded", "failed", "evicted", "deadline")
POLICIES = ("All", "Running", "None")


def _finished(status: Obj) -> bool:
    return any(
        c.get("type") in ("Succeeded", "Failed") and c.get("status") == "True"
        for c in status.get("conditions") or ()
    )


def _creates_after_the_end(harness: Harness, job: str) -> list[tuple[str, str]]:
    """Children the controller created after the status write that first said the job had finished."""
    end = None
    for i, (verb, plural, name, body) in enumerate(harness.writer.sent):
        if (verb, plural, name) == ("update_status", "mpijobs", job) and _finished(
            (body or {}).get("status") or {}
        ):
            end = i
            break
    assert end is not None, "no status write finished the job"
    later = harness.writer.sent[end + 1 :]
    # The event that tells of the end may be sent after that status write; it is not a child.
    return [(plural, name) for verb, plural, name, _ in later if verb == "create" and plural != "events"]


async def _running(a: Actors, harness: Harness, policy: str) -> LauncherJobController:
    """A job of two workers whose launcher pod runs under a Job controller played by the test."""
    a.submit(mpijob(JOB, workers=2, run_policy={"cleanPodPolicy": policy}))
    await a.until(lambda: a.launcher_job(JOB), "launcher Job")
    a.set_workers(JOB, "Running", ready=True)
    job_controller = LauncherJobController(a, JOB)
    job_controller.start()
    await a.until_true(lambda: (a.condition(JOB, "Running") or {}).get("status") == "True", "the job Running")
    await a.until_true(harness.controller.queue_idle, "the work queue to drain")
    return job_controller


async def _further_sync_writes_nothing(harness: Harness, job: str) -> None:
    await harness.controller.recorder.flush()
    harness.writer.writes.clear()
    await harness.synced_again(job)
    await harness.controller.recorder.flush()
    assert harness.writer.writes == [], "a sync of the finished job wrote to the API"


async def test_eviction_under_clean_pod_policy_all_stops_the_launcher_job_once(harness: Harness) -> None:
    """D5 #7 and #11: a worker evicted under cleanPodPolicy All ends the job and stops the launcher. It is
    stopped by suspending its Job, once: deleting the pod on every sync left the Job active, so the Job
    controller made a new launcher pod each time (121 in 120 s on kwok)."""
    a = Actors(harness.cluster, harness.namespace)
    job_controller = await _running(a, harness, "All")
    try:
        [first_pod] = [name for _, name in job_controller.created]
        a.set_pod(f"{JOB}-worker-1", "Failed", reason="Evicted")
        await a.until_true(
            lambda: (a.condition(JOB, "Failed") or {}).get("reason") == "MPIJobEvicted", "the job evicted"
        )
        finished_at = time.monotonic()

        async def launcher_stopped() -> tuple[bool, str]:
            launcher = a.launcher_job(JOB) or {}
            suspended = bool(launcher.get("spec", {}).get("suspend"))
            active = len(job_controller.active_pods())
            churn = len(job_controller.created_since(finished_at))
            return suspended and active == 0, (
                f"launcher Job suspended: {suspended}, active launcher pods: {active}, "
                f"launcher pods created since the job finished: {churn}"
            )

        await async_wait_for(launcher_stopped, timeout=15, what="the launcher stopped", done=lambda s: s[0])
        await a.until_true(lambda: a.worker_pods(JOB) == [], "every worker deleted (policy All)")
        await a.until_true(harness.controller.queue_idle, "the work queue to drain")
    finally:
        await job_controller.stop()

    assert job_controller.created_since(finished_at) == []
    assert job_controller.deleted_for_suspension == [first_pod]
    assert _creates_after_the_end(harness, JOB) == []
    await _further_sync_writes_nothing(harness, JOB)


def _end(a: Actors, outcome: str) -> None:
    """End the running job the way each outcome happens in a cluster."""
    if outcome == "succeeded":
        [pod] = [p["metadata"]["name"] for p in _launcher_pods(a)]
        a.set_launcher_job(JOB, "Complete")
        a.set_pod(pod, "Succeeded")
    elif outcome == "failed":
        [pod] = [p["metadata"]["name"] for p in _launcher_pods(a)]
        a.set_launcher_job(
            JOB,
            "Failed",
            reason="BackoffLimitExceeded",
            message="Job has reached the specified backoff limit",
            failed=1,
        )
        a.set_pod(pod, "Failed", reason="Error")
    elif outcome == "deadline":
        # activeDeadlineSeconds: the Job controller deletes the running pod and fails the Job.
        a.set_launcher_job(
            JOB, "Failed", reason="DeadlineExceeded", message="Job was active longer than specified deadline"
        )
        for pod in _launcher_pods(a):
            a.rest.delete(a.path("pods", pod["metadata"]["name"]))
    else:
        a.set_pod(f"{JOB}-worker-1", "Failed", reason="Evicted")


def _launcher_pods(a: Actors) -> list[Obj]:
    return [p for p in a.items("pods", "training.kubeflow.org/job-role=launcher")]


def _workers_left(outcome: str, policy: str) -> list[str]:
    if policy == "All":
        return []
    if policy == "Running":
        return [f"{JOB}-worker-1"] if outcome == "evicted" else []  # a Failed pod is not running
    return [f"{JOB}-worker-0", f"{JOB}-worker-1"]


@pytest.mark.parametrize("policy", POLICIES)
@pytest.mark.parametrize("outcome", OUTCOMES)
async def test_finished_job_creates_nothing_and_a_further_sync_writes_nothing(
    harness: Harness, outcome: str, policy: str
) -> None:
    a = Actors(harness.cluster, harness.namespace)
    job_controller = await _running(a, harness, policy)
    try:
        _end(a, outcome)
        await a.until_true(lambda: _finished(a.status(JOB)), f"the job finished ({outcome})")
        finished_at = time.monotonic()
        assert a.status(JOB).get("completionTime")
        expected = _workers_left(outcome, policy)
        await a.until_true(
            lambda: [p["metadata"]["name"] for p in a.worker_pods(JOB)] == expected,
            f"workers cleaned up per cleanPodPolicy {policy}: {expected}",
        )
        if policy == "All":
            await a.until_true(lambda: not job_controller.active_pods(), "no launcher pod running")
        await a.until_true(harness.controller.queue_idle, "the work queue to drain")
    finally:
        await job_controller.stop()

    assert job_controller.created_since(finished_at) == []
    assert _creates_after_the_end(harness, JOB) == []
    launcher = a.launcher_job(JOB)
    assert launcher is not None
    # Only an unfinished launcher Job of a job that must lose every pod is suspended.
    assert bool(launcher["spec"].get("suspend")) == (outcome == "evicted" and policy == "All")
    await _further_sync_writes_nothing(harness, JOB)


async def test_job_evicted_under_upstream_without_a_completion_time_is_finished_and_creates_nothing(
    mpijob_crd: LocalCluster, make_namespace: Any
) -> None:
    """D5 #7 for a job upstream evicted before the switch: Failed (MPIJobEvicted) but no completionTime,
    the evicted worker since removed. Upstream's rule (finished only with a completionTime) would sync
    it as a running job and create the missing worker again; it is finished, so it gets its
    completionTime (the Failed condition's time) and is cleaned up like any other finished job."""
    async with informers_only(mpijob_crd, make_namespace(mpijob_crd)) as h:
        scene = Scene(h)
        scene.submit(mpijob("old", workers=2, run_policy=ALL))
        ns, started, evicted = scene.ns, _ago(120), _ago(60)
        scene.put_status(
            "old",
            {
                "startTime": started,
                "conditions": [
                    {
                        "type": "Created",
                        "status": "True",
                        "reason": "MPIJobCreated",
                        "message": f"MPIJob {ns}/old is created.",
                        "lastUpdateTime": started,
                        "lastTransitionTime": started,
                    },
                    {
                        "type": "Failed",
                        "status": "True",
                        "reason": "MPIJobEvicted",
                        "message": "1/2 workers are evicted",
                        "lastUpdateTime": evicted,
                        "lastTransitionTime": evicted,
                    },
                ],
                "replicaStatuses": {"Launcher": {"active": 1}, "Worker": {"active": 1, "failed": 1}},
            },
        )
        scene.create_launcher("old")
        scene.create_workers("old", 1, phase="Running")  # old-worker-1, the evicted one, is gone

        assert await scene.sync("old") == [
            ("delete", "pods", "old-worker-0"),
            ("update", "jobs", "old-launcher"),
            ("update_status", "mpijobs", "old"),
        ]

        status = scene.status("old")
        assert status["completionTime"] == evicted
        assert status["replicaStatuses"]["Worker"] == {}
        launcher = scene.launcher_job("old")
        assert launcher is not None and launcher["spec"]["suspend"] is True
        await scene.assert_converged("old")
