"""Whole-job restarts (mpioperator.io/restart-policy) against a real API server: the test plays kubelet
and, through `LauncherJobController`, the Job controller (there is no kube-controller-manager here, so no
garbage collector either: what goes, the operator deletes itself)."""

from __future__ import annotations

import datetime as dt
from typing import Any

from mpioperator.api.extensions import restarts
from mpioperator.api.objects import Obj
from mpioperator.kube import errors
from mpioperator.kube.delete_options import BACKGROUND, DeleteOptions
from mpioperator.testing.cluster import LocalCluster
from mpioperator.testing.mpijobs import mpijob
from test.integration.controller.actors import Actors, submitted
from test.integration.controller.conftest import CountingWriter, Harness, running_controller
from test.integration.controller.test_gang_scheduling import VOLCANO_ROOT, GangActors

JOB = "again"


def _restartable(policy: str = "OnWorkerFailure", max_restarts: int = 2, **kwargs: Any) -> Obj:
    body = mpijob(
        JOB,
        workers=2,
        **kwargs,
        annotations={
            restarts.RESTART_POLICY: policy,
            restarts.MAX_RESTARTS: str(max_restarts),
            # The shortest back-off: these tests are about what a restart does, not when.
            restarts.RESTART_BACKOFF: "1",
        },
    )
    return body


def _attempt(obj: Obj) -> str | None:
    labels: dict[str, str] = obj["metadata"].get("labels") or {}
    return labels.get(restarts.ATTEMPT_LABEL)


def _uids(objs: list[Obj]) -> set[str]:
    return {o["metadata"]["uid"] for o in objs}


async def _attempt_running(a: Actors, attempt: int) -> list[Obj]:
    """Waits for the attempt's workers and launcher Job, runs its workers; the workers made."""
    await a.until_true(
        lambda: len(a.worker_pods(JOB)) == 2 and all(_attempt(p) == str(attempt) for p in a.worker_pods(JOB)),
        f"attempt {attempt}'s two workers",
    )
    await a.until_true(
        lambda: _attempt(a.launcher_job(JOB) or {"metadata": {}}) == str(attempt),
        f"attempt {attempt}'s launcher Job",
    )
    workers = a.worker_pods(JOB)
    a.set_workers(JOB, "Running", ready=True)
    await a.until_true(lambda: (a.condition(JOB, "Running") or {}).get("status") == "True", "the job Running")
    return workers


def _launcher_pods(a: Actors) -> list[Obj]:
    return a.items("pods", "training.kubeflow.org/job-role=launcher")


async def test_a_failed_worker_restarts_the_whole_job_which_then_succeeds_with_restarts_1(
    harness: Harness,
) -> None:
    a = Actors(harness.cluster, harness.namespace)
    async with submitted(a, _restartable()) as job_controller:
        first = await _attempt_running(a, 0)
        first_launcher = a.launcher_job(JOB)
        assert first_launcher is not None
        await a.until_true(lambda: len(_launcher_pods(a)) == 1, "attempt 0's launcher pod")
        first_launcher_pods = _uids(_launcher_pods(a))

        a.set_pod(f"{JOB}-worker-1", "Failed")

        await a.until_true(lambda: a.status(JOB).get("restarts") == 1, "the restart counted")
        second = await _attempt_running(a, 1)
        assert not _uids(first) & _uids(second), "a worker of the first attempt survived the restart"
        second_launcher = a.launcher_job(JOB)
        assert second_launcher is not None
        assert second_launcher["metadata"]["uid"] != first_launcher["metadata"]["uid"]
        await a.until_true(
            lambda: not _uids(_launcher_pods(a)) & first_launcher_pods, "attempt 0's launcher pods deleted"
        )
        assert a.condition(JOB, "Restarting") is None  # Running replaced it

        [pod] = [p["metadata"]["name"] for p in job_controller.active_pods()]
        a.set_launcher_job(JOB, "Complete")
        a.set_pod(pod, "Succeeded")
        await a.until_true(
            lambda: (a.condition(JOB, "Succeeded") or {}).get("status") == "True", "the job Succeeded"
        )
    assert a.status(JOB)["restarts"] == 1
    await harness.controller.recorder.flush()
    reasons = a.event_reasons(JOB)
    assert reasons.count("MPIJobRestarting") == 1, reasons
    [event] = [e for e in a.events(JOB) if e["reason"] == "MPIJobRestarting"]
    assert event["type"] == "Warning"
    assert "restart 1 of at most 2" in event["message"]
    assert f"{JOB}-worker-1" in event["message"]


async def test_a_job_failing_once_more_than_it_may_restart_ends_failed_with_the_last_reason(
    harness: Harness,
) -> None:
    a = Actors(harness.cluster, harness.namespace)
    async with submitted(a, _restartable(max_restarts=1, run_policy={"cleanPodPolicy": "All"})):
        await _attempt_running(a, 0)
        a.set_pod(f"{JOB}-worker-0", "Failed", reason="Evicted")
        await a.until_true(lambda: a.status(JOB).get("restarts") == 1, "the restart counted")
        await _attempt_running(a, 1)

        a.set_pod(f"{JOB}-worker-0", "Failed", reason="Evicted")

        await a.until_true(
            lambda: (a.condition(JOB, "Failed") or {}).get("status") == "True", "the job Failed"
        )
        # cleanPodPolicy All as for one attempt: the workers go, the launcher Job is stopped.
        await a.until_true(lambda: a.worker_pods(JOB) == [], "the last attempt's workers deleted")
        await a.until_true(
            lambda: bool((a.launcher_job(JOB) or {})["spec"].get("suspend")), "launcher stopped"
        )
    status = a.status(JOB)
    failed = a.condition(JOB, "Failed") or {}
    assert failed["reason"] == "MPIJobEvicted"
    assert "restarted 1 times, the most mpioperator.io/max-restarts allows" in failed["message"]
    assert status["restarts"] == 1
    assert status.get("completionTime")
    await harness.controller.recorder.flush()
    reasons = a.event_reasons(JOB)
    assert reasons.count("MPIJobRestarting") == 1, reasons
    assert reasons.count("MPIJobEvicted") == 1, reasons


async def test_a_failed_launcher_restarts_the_job_under_on_failure(harness: Harness) -> None:
    a = Actors(harness.cluster, harness.namespace)
    async with submitted(a, _restartable("OnFailure")):
        await _attempt_running(a, 0)

        a.set_launcher_job(JOB, "Failed", reason="BackoffLimitExceeded", message="Job has reached the limit")

        await a.until_true(lambda: a.status(JOB).get("restarts") == 1, "the restart counted")
        await _attempt_running(a, 1)
    assert a.condition(JOB, "Failed") is None
    launcher = a.launcher_job(JOB) or {}
    assert not (launcher.get("status") or {}).get("conditions"), "the new attempt's launcher Job is new"


class _DeletesNothing(CountingWriter):
    """Answers every delete with a server error, as an API server going away would: a leader that counted
    a restart then dies before deleting anything is what this leaves behind."""

    async def delete(
        self, res: Any, name: str, namespace: str | None = None, options: DeleteOptions = BACKGROUND
    ) -> Obj:
        self.writes.append(("delete", res.plural, name))
        raise errors.ApiError(500, "InternalError", "Internal error occurred: going away")


async def test_a_new_leader_finishes_a_counted_restart_without_counting_it_again(
    mpijob_crd: LocalCluster, make_namespace: Any
) -> None:
    ns = make_namespace(mpijob_crd)
    a = Actors(mpijob_crd, ns)
    async with submitted(a, _restartable()):
        async with running_controller(mpijob_crd, ns, writer_type=_DeletesNothing) as old_leader:
            first = await _attempt_running(a, 0)
            a.set_pod(f"{JOB}-worker-1", "Failed")
            await a.until_true(lambda: a.status(JOB).get("restarts") == 1, "the restart counted")
            await a.until_true(
                lambda: any(w[0] == "delete" for w in old_leader.writer.writes), "the old leader deleting"
            )
            await old_leader.controller.recorder.flush()
        # The first attempt is all there, one worker Failed, while the count says it was restarted.
        assert _uids(a.worker_pods(JOB)) == _uids(first)

        async with running_controller(mpijob_crd, ns) as new_leader:
            second = await _attempt_running(a, 1)
            await a.until_true(new_leader.controller.queue_idle, "the work queue to drain")
            await new_leader.controller.recorder.flush()
            new_status_writes = [w for w in new_leader.writer.sent if w[:2] == ("update_status", "mpijobs")]
    assert not _uids(first) & _uids(second)
    assert a.status(JOB)["restarts"] == 1
    assert all(((body or {}).get("status") or {}).get("restarts") == 1 for *_, body in new_status_writes)
    assert a.event_reasons(JOB).count("MPIJobRestarting") == 1


async def test_a_job_without_the_annotation_is_not_restarted_and_its_pods_carry_no_attempt(
    harness: Harness,
) -> None:
    a = Actors(harness.cluster, harness.namespace)
    async with submitted(a, mpijob(JOB, workers=2)):
        await a.until(lambda: a.launcher_job(JOB), "launcher Job")
        a.set_workers(JOB, "Running", ready=True)
        await a.until_true(
            lambda: (a.condition(JOB, "Running") or {}).get("status") == "True", "the job Running"
        )
        assert all(_attempt(p) is None for p in a.worker_pods(JOB))
        assert _attempt(a.launcher_job(JOB) or {"metadata": {}}) is None

        a.set_pod(f"{JOB}-worker-0", "Failed", reason="Evicted")

        await a.until_true(
            lambda: (a.condition(JOB, "Failed") or {}).get("status") == "True", "the job Failed"
        )
    assert "restarts" not in a.status(JOB)
    await harness.controller.recorder.flush()
    assert "MPIJobRestarting" not in a.event_reasons(JOB)


async def test_a_gangs_pod_group_is_kept_across_a_restart_and_the_new_attempt_joins_it(
    podgroup_crds: LocalCluster, make_namespace: Any
) -> None:
    ns = make_namespace(podgroup_crds)
    async with running_controller(podgroup_crds, ns, gang_scheduling="volcano") as h:
        a = GangActors(h, VOLCANO_ROOT)
        async with submitted(a, _restartable()):
            group = await a.wait_pod_group(JOB)
            await _attempt_running(a, 0)
            a.set_pod(f"{JOB}-worker-1", "Failed", reason="Evicted")
            await a.until_true(lambda: a.status(JOB).get("restarts") == 1, "the restart counted")
            second = await _attempt_running(a, 1)
        kept = a.pod_group(JOB)
        assert kept is not None and kept["metadata"]["uid"] == group["metadata"]["uid"]
        assert kept["spec"]["minMember"] == group["spec"]["minMember"]
        for pod in second:
            assert pod["metadata"]["annotations"]["scheduling.k8s.io/group-name"] == JOB
        template = a.launcher_template(JOB)
        assert template["metadata"]["annotations"]["scheduling.k8s.io/group-name"] == JOB


async def test_suspending_a_restartable_job_deletes_its_workers_without_counting_a_restart(
    harness: Harness,
) -> None:
    a = Actors(harness.cluster, harness.namespace)
    async with submitted(a, _restartable()):
        first = await _attempt_running(a, 0)

        a.patch_spec(JOB, {"spec": {"runPolicy": {"suspend": True}}})

        await a.until_true(lambda: a.worker_pods(JOB) == [], "the workers deleted by the suspension")
        await a.until_true(
            lambda: (a.condition(JOB, "Suspended") or {}).get("status") == "True", "the job Suspended"
        )
        a.patch_spec(JOB, {"spec": {"runPolicy": {"suspend": False}}})
        resumed = await _attempt_running(a, 0)
    assert not _uids(first) & _uids(resumed)
    assert "restarts" not in a.status(JOB)
    await harness.controller.recorder.flush()
    assert "MPIJobRestarting" not in a.event_reasons(JOB)


async def test_the_new_attempt_is_made_no_earlier_than_the_next_attempt_time_the_server_keeps(
    harness: Harness,
) -> None:
    a = Actors(harness.cluster, harness.namespace)
    body = _restartable()
    body["metadata"]["annotations"][restarts.RESTART_BACKOFF] = "5"
    async with submitted(a, body):
        await _attempt_running(a, 0)

        a.set_pod(f"{JOB}-worker-1", "Failed")

        await a.until_true(lambda: a.status(JOB).get("restarts") == 1, "the restart counted")
        status = a.status(JOB)  # as the API server keeps it: the CRD's schema must not prune these
        assert status["restartDelaySeconds"] == 5
        due = dt.datetime.fromisoformat(status["nextAttemptTime"].replace("Z", "+00:00"))
        second = await _attempt_running(a, 1)
    made = [
        dt.datetime.fromisoformat(p["metadata"]["creationTimestamp"].replace("Z", "+00:00")) for p in second
    ]
    assert min(made) >= due, (made, due)
