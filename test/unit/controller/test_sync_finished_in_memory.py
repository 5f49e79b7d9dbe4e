"""One sync of a finished job against in-memory caches: clean-up per cleanPodPolicy, then nothing more;
the TTL. Exact writes asserted, as in test_sync_in_memory.py."""

from __future__ import annotations

import pytest

from test.unit.controller.sync_fixtures import (
    Scene,
    finished_status,
    index_listers,
    job,
    launcher,
    launcher_pod,
    running_job,
    running_scene,
    shared_children,
    worker,
)

# --- a finished job ----------------------------------------------------------------------------------------


async def test_finished_job_that_is_clean_writes_nothing_more() -> None:
    pi = job(workers=2, status=finished_status("Succeeded", "MPIJobSucceeded"))
    done = launcher(pi, "Complete")
    scene = Scene(pi, *shared_children(pi), worker(pi, 0, "Succeeded"), worker(pi, 1, "Succeeded"), done)

    await scene.sync()

    assert scene.writer.calls == []
    assert scene.recorder.events == []


def _finished_with_workers(policy: str) -> Scene:
    status = finished_status("Succeeded", "MPIJobSucceeded", workers={"active": 1, "succeeded": 1})
    pi = job(workers=3, status=status, cleanPodPolicy=policy)
    done = launcher(pi, "Complete")
    return Scene(
        pi,
        *shared_children(pi),
        worker(pi, 0, "Running"),
        worker(pi, 1, "Succeeded"),
        worker(pi, 2, "Pending", ready=False),
        done,
        launcher_pod(pi, done, "Running"),
    )


async def test_clean_pod_policy_running_deletes_only_running_and_pending_workers_on_finish() -> None:
    scene = _finished_with_workers("Running")

    await scene.sync()

    assert scene.writer.calls == [
        ("delete", "pods", "pi-worker-0"),
        ("delete", "pods", "pi-worker-2"),
        ("update_status", "mpijobs", "pi"),
    ]
    assert scene.written_status()["replicaStatuses"]["Worker"] == {}


async def test_clean_pod_policy_all_deletes_every_worker_and_the_launchers_running_pod_on_finish() -> None:
    scene = _finished_with_workers("All")

    await scene.sync()

    assert scene.writer.calls == [
        ("delete", "pods", "pi-worker-0"),
        ("delete", "pods", "pi-worker-1"),
        ("delete", "pods", "pi-worker-2"),
        ("delete", "pods", "pi-launcher-x1"),
        ("update_status", "mpijobs", "pi"),
    ]
    assert scene.written_status()["replicaStatuses"]["Worker"] == {}


async def test_clean_pod_policy_none_leaves_every_pod_and_the_status_alone_on_finish() -> None:
    scene = _finished_with_workers("None")

    await scene.sync()

    assert scene.writer.calls == []


async def test_clean_pod_policy_all_suspends_an_unfinished_launcher_job_of_an_evicted_job() -> None:
    status = finished_status("Failed", "MPIJobEvicted")
    pi = job(workers=1, status=status, cleanPodPolicy="All")
    active = launcher(pi, active=1)
    scene = Scene(pi, *shared_children(pi), worker(pi, 0, "Failed", reason="Evicted"), active)

    await scene.sync()

    # The Job controller stops its pods; deleting the pod instead would only have it replaced.
    assert scene.writer.calls == [("delete", "pods", "pi-worker-0"), ("update", "jobs", "pi-launcher")]
    assert scene.writer.body("update", "jobs", "pi-launcher")["spec"]["suspend"] is True


async def test_finished_job_past_its_ttl_is_deleted() -> None:
    pi = job(workers=1, status=finished_status("Succeeded", "MPIJobSucceeded"), ttlSecondsAfterFinished=60)
    scene = Scene(pi, *shared_children(pi), launcher(pi, "Complete"))

    result = await scene.sync()

    assert scene.writer.calls == [("delete", "mpijobs", "pi")]
    assert result.requeue_after is None


async def test_finished_job_within_its_ttl_asks_to_be_revisited_when_it_expires() -> None:
    pi = job(workers=1, status=finished_status("Succeeded", "MPIJobSucceeded"), ttlSecondsAfterFinished=7200)
    scene = Scene(pi, *shared_children(pi), launcher(pi, "Complete"))

    result = await scene.sync()

    assert scene.writer.calls == []
    assert result.requeue_after == pytest.approx(3600)


async def test_a_job_that_finishes_lets_go_of_the_workers_and_pod_walks_the_sync_kept_of_it() -> None:
    # The children step keeps each running job's worker list while its pods are unchanged; a finished job
    # never reads it again, so kept it would hold the job's last pods in memory until other jobs pushed it
    # out (up to 50,000 pods).
    pi = running_job(workers=2)
    scene = running_scene(pi)
    index_listers(scene)  # the pod store's change numbers, by which a kept worker list is known unchanged
    uid = pi["metadata"]["uid"]
    children = scene.syncer._children

    await scene.sync()
    assert children.holds_workers_of(uid)
    assert scene.syncer._reporter.holds_pods_of(uid)

    finished = finished_status("Succeeded", "MPIJobSucceeded")
    scene.job["status"].clear()
    scene.job["status"].update(finished)
    await scene.sync()
    assert not children.holds_workers_of(uid)
    assert not scene.syncer._reporter.holds_pods_of(uid)
