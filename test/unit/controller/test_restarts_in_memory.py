"""Whole-job restarts (mpioperator.io/restart-policy) decided by one sync against in-memory caches: when a
restart is counted, what an earlier attempt leaves behind, and what the new attempt is made with."""

from __future__ import annotations

from mpioperator.api.extensions import restarts
from mpioperator.api.objects import Obj
from test.unit.controller.sync_fixtures import (
    NOW,
    Scene,
    failed_worker,
    labelled_launcher_pod,
    launcher,
    running_job,
    running_scene,
    running_status,
    shared_children,
    true_condition,
    worker,
)


def _opted_in(policy: str = "OnWorkerFailure", max_restarts: str | None = None, **status: object) -> Obj:
    annotations = {restarts.RESTART_POLICY: policy}
    if max_restarts is not None:
        annotations[restarts.MAX_RESTARTS] = max_restarts
    return running_job(2, annotations, **status)


def _scene(pi: Obj, *workers: Obj, launcher_condition: str | None = None) -> Scene:
    """`pi` with every child in place, its launcher pod labelled as the Job controller labels it."""
    return running_scene(pi, *workers, launcher_condition=launcher_condition, labelled=True)


def _condition(status: Obj, cond_type: str) -> Obj | None:
    return next((c for c in status.get("conditions") or () if c["type"] == cond_type), None)


async def test_a_failed_worker_counts_a_restart_then_deletes_every_pod_of_the_attempt() -> None:
    pi = _opted_in()
    failed = failed_worker(pi, 1)
    scene = _scene(pi, worker(pi, 0), failed)

    result = await scene.sync()

    assert scene.writer.calls == [
        ("update_status", "mpijobs", "pi"),
        ("delete", "jobs", "pi-launcher"),
        ("delete", "pods", "pi-worker-0"),
        ("delete", "pods", "pi-worker-1"),
        ("delete", "pods", "pi-launcher-x1"),
    ]
    status = scene.written_status()
    assert status["restarts"] == 1
    restarting = _condition(status, "Restarting")
    assert restarting is not None and restarting["status"] == "True"
    assert restarting["reason"] == "MPIJobRestarting"
    assert "restart 1 of at most 3" in restarting["message"]
    assert "worker pi-worker-1 ended with exit code 3" in restarting["message"]
    assert _condition(status, "Running") is None  # upstream's pairing: Restarting replaces Running
    assert status["phase"] == "Pending"
    assert scene.recorder.events == [("Warning", "MPIJobRestarting", restarting["message"])]
    assert result.requeue_after is not None


async def test_an_evicted_worker_restarts_the_job_instead_of_failing_it() -> None:
    pi = _opted_in()
    scene = _scene(pi, worker(pi, 0), worker(pi, 1, "Failed", reason="Evicted"))

    await scene.sync()

    status = scene.written_status()
    assert status["restarts"] == 1
    assert _condition(status, "Failed") is None
    assert "worker pi-worker-1 was evicted" in (_condition(status, "Restarting") or {})["message"]


async def test_a_worker_deleted_while_the_attempt_runs_restarts_the_job() -> None:
    pi = _opted_in()
    going = worker(pi, 1)
    going["metadata"]["deletionTimestamp"] = NOW
    scene = _scene(pi, worker(pi, 0), going)

    await scene.sync()

    status = scene.written_status()
    assert status["restarts"] == 1
    assert "worker pi-worker-1 was deleted" in (_condition(status, "Restarting") or {})["message"]


async def test_a_failed_launcher_restarts_the_job_only_under_on_failure() -> None:
    on_failure = _opted_in("OnFailure")
    scene = _scene(on_failure, worker(on_failure, 0), worker(on_failure, 1), launcher_condition="Failed")

    await scene.sync()

    assert scene.written_status()["restarts"] == 1
    assert (
        "launcher pi-launcher failed" in (_condition(scene.written_status(), "Restarting") or {})["message"]
    )

    workers_only = _opted_in("OnWorkerFailure")
    scene = _scene(
        workers_only, worker(workers_only, 0), worker(workers_only, 1), launcher_condition="Failed"
    )

    await scene.sync()

    status = scene.written_status()
    assert "restarts" not in status
    assert (_condition(status, "Failed") or {}).get("status") == "True"


async def test_after_the_last_restart_the_next_failure_fails_the_job_with_that_attempts_reason() -> None:
    pi = _opted_in(max_restarts="2", restarts=2)
    pi["metadata"].setdefault("labels", {})
    workers = [worker(pi, 0), worker(pi, 1, "Failed", reason="Evicted")]
    for pod in workers:
        assert pod["metadata"]["labels"][restarts.ATTEMPT_LABEL] == "2"
    scene = _scene(pi, *workers)

    await scene.sync()

    status = scene.written_status()
    assert status["restarts"] == 2
    failed = _condition(status, "Failed")
    assert failed is not None and failed["status"] == "True"
    assert failed["reason"] == "MPIJobEvicted"
    assert "restarted 2 times, the most mpioperator.io/max-restarts allows" in failed["message"]
    assert [e[1] for e in scene.recorder.events] == ["MPIJobEvicted"]


async def test_a_failure_already_counted_is_not_counted_again_its_pods_are_only_deleted() -> None:
    # A new leader, or the sync after the restart, sees the failed attempt's pods while the count already
    # says a restart happened: they belong to attempt 0, and attempt 1 is the one running.
    attempt_0 = _opted_in()
    old = [worker(attempt_0, 0), worker(attempt_0, 1, "Failed", reason="Evicted")]
    old_launcher = launcher(attempt_0)
    restarting = true_condition("Restarting", "MPIJobRestarting", "restarting", NOW)
    pi = _opted_in(restarts=1, conditions=[running_status(2)["conditions"][0], restarting])
    scene = Scene(
        pi, *shared_children(pi), *old, old_launcher, labelled_launcher_pod(pi, old_launcher, "Failed")
    )

    result = await scene.sync()

    assert scene.writer.calls == [
        ("delete", "jobs", "pi-launcher"),
        ("delete", "pods", "pi-worker-0"),
        ("delete", "pods", "pi-worker-1"),
        ("delete", "pods", "pi-launcher-x1"),
    ]
    assert scene.recorder.events == []
    assert result.requeue_after is not None


async def test_nothing_of_the_new_attempt_is_made_while_a_pod_of_the_earlier_one_terminates() -> None:
    attempt_0 = _opted_in()
    terminating = worker(attempt_0, 1)
    terminating["metadata"]["deletionTimestamp"] = NOW
    pi = _opted_in(restarts=1)
    scene = Scene(pi, *shared_children(pi), terminating)

    await scene.sync()

    assert scene.writer.calls == []


async def test_once_the_earlier_attempt_is_gone_the_new_one_is_made_with_its_attempt_label() -> None:
    restarting = true_condition("Restarting", "MPIJobRestarting", "restarting", NOW)
    pi = _opted_in(restarts=1, conditions=[running_status(2)["conditions"][0], restarting])
    scene = Scene(pi, *shared_children(pi))

    await scene.sync()

    made = [c for c in scene.writer.calls if c[0] == "create"]
    assert made == [
        ("create", "pods", "pi-worker-0"),
        ("create", "pods", "pi-worker-1"),
        ("create", "jobs", "pi-launcher"),
    ]
    for verb, resource, name in made:
        body = scene.writer.body(verb, resource, name)
        assert body["metadata"]["labels"][restarts.ATTEMPT_LABEL] == "1"
    launcher_body = scene.writer.body("create", "jobs", "pi-launcher")
    assert launcher_body["spec"]["template"]["metadata"]["labels"][restarts.ATTEMPT_LABEL] == "1"
    assert scene.recorder.events == []


async def test_the_new_attempt_running_replaces_restarting_with_running() -> None:
    restarting = true_condition("Restarting", "MPIJobRestarting", "restarting", NOW)
    pi = _opted_in(restarts=1, conditions=[running_status(2)["conditions"][0], restarting])
    scene = _scene(pi, worker(pi, 0), worker(pi, 1))

    await scene.sync()

    status = scene.written_status()
    assert _condition(status, "Restarting") is None
    assert (_condition(status, "Running") or {}).get("status") == "True"
    assert status["restarts"] == 1
    assert [e[1] for e in scene.recorder.events] == ["MPIJobRunning"]


async def test_a_worker_failing_as_the_launcher_completes_does_not_restart_a_succeeded_job() -> None:
    pi = _opted_in()
    scene = _scene(
        pi, worker(pi, 0), worker(pi, 1, "Failed", reason="Evicted"), launcher_condition="Complete"
    )

    await scene.sync()

    status = scene.written_status()
    assert "restarts" not in status
    assert (_condition(status, "Succeeded") or {}).get("status") == "True"


async def test_a_suspended_job_with_a_failed_worker_is_not_restarted() -> None:
    pi = _opted_in()
    pi["spec"]["runPolicy"]["suspend"] = True
    scene = _scene(pi, worker(pi, 0), worker(pi, 1, "Failed", reason="Evicted"))

    await scene.sync()

    assert "restarts" not in scene.written_status()
    assert all(e[1] != "MPIJobRestarting" for e in scene.recorder.events)


async def test_without_the_annotation_a_failed_worker_is_left_to_upstreams_rules() -> None:
    pi = running_job()
    failed = failed_worker(pi, 1)
    assert restarts.ATTEMPT_LABEL not in failed["metadata"]["labels"]
    scene = _scene(pi, worker(pi, 0), failed)

    await scene.sync()

    assert not any(c[0] == "delete" for c in scene.writer.calls)
    assert all(e[1] != "MPIJobRestarting" for e in scene.recorder.events)


async def test_bad_restart_annotations_are_validation_errors() -> None:
    pi = _opted_in("Always", max_restarts="²")
    scene = Scene(pi)

    await scene.sync()

    invalid = _condition(scene.written_status(), "Invalid")
    assert invalid is not None
    assert "mpioperator.io/restart-policy" in invalid["message"]
    assert "mpioperator.io/max-restarts" in invalid["message"]
    assert [e[1] for e in scene.recorder.events] == ["ValidationError"]


async def test_a_worker_gone_from_the_cache_between_two_syncs_of_a_running_attempt_restarts_the_job() -> None:
    """A drain's eviction of a worker whose sshd ends at once: its pod can leave the cache before any sync
    sees it terminating; it must not be made again under a launcher that has lost its rank."""
    pi = _opted_in()
    scene = _scene(pi, worker(pi, 0), worker(pi, 1))
    await scene.sync()
    assert "restarts" not in (scene.job.get("status") or {})

    scene.memory["pods"].discard("default", "pi-worker-1")
    await scene.sync()

    status = scene.written_status()
    assert status["restarts"] == 1
    assert "worker pi-worker-1 was deleted" in (_condition(status, "Restarting") or {})["message"]
    assert ("create", "pods") not in [(verb, kind) for verb, kind, _ in scene.writer.calls]


async def test_a_worker_the_operator_deleted_itself_is_no_loss() -> None:
    pi = _opted_in()
    scene = _scene(pi, worker(pi, 0), worker(pi, 1))
    await scene.sync()

    pi["spec"]["mpiReplicaSpecs"]["Worker"]["replicas"] = 1  # a scale down: the operator deletes pi-worker-1
    await scene.sync()
    assert ("delete", "pods", "pi-worker-1") in scene.writer.calls
    scene.memory["pods"].discard("default", "pi-worker-1")
    await scene.sync()

    assert "restarts" not in (scene.job.get("status") or {})
    assert not any(reason == "MPIJobRestarting" for _, reason, _ in scene.recorder.events)
