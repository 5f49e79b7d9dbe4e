"""Deliberate differences from upstream (decisions.md D5) not shown elsewhere, on a real API server.

Each test names its D5 number; the harness is the single-sync one of test_upstream_sync_scenarios.py.
"""

from __future__ import annotations

import copy
from collections.abc import AsyncIterator
from typing import Any

import pytest_asyncio

from mpioperator.api import constants as api
from mpioperator.api.objects import Obj
from mpioperator.controller.builders import worker_pod
from mpioperator.testing.cluster import LocalCluster
from mpioperator.testing.mpijobs import mpijob
from test.integration.controller.test_upstream_sync_scenarios import (
    ALL,
    Scene,
    _ago,
    informers_only,
    succeeded_status,
)


@pytest_asyncio.fixture
async def scene(mpijob_crd: LocalCluster, make_namespace: Any) -> AsyncIterator[Scene]:
    async with informers_only(mpijob_crd, make_namespace(mpijob_crd)) as h:
        yield Scene(h)


def _succeeded(scene: Scene, job: str, *, finished_seconds_ago: int) -> Obj:
    started, completed = _ago(finished_seconds_ago + 30), _ago(finished_seconds_ago)
    return succeeded_status(scene.ns, job, started, completed, worker={})


async def test_finished_job_past_its_ttl_is_deleted_itself(scene: Scene) -> None:
    """D5 #12: upstream hands ttlSecondsAfterFinished to the launcher Job only; the MPIJob stayed."""
    scene.submit(mpijob("expired", workers=1, run_policy={**ALL, "ttlSecondsAfterFinished": 10}))
    scene.put_status("expired", _succeeded(scene, "expired", finished_seconds_ago=30))

    assert await scene.sync("expired") == [("delete", "mpijobs", "expired")]
    await scene.until_true(lambda: scene.get("mpijobs", "expired") is None, "the MPIJob gone")


async def test_finished_job_within_its_ttl_is_kept_and_revisited_when_it_expires(scene: Scene) -> None:
    """D5 #12: before the TTL nothing is written; the sync asks to be run again when it runs out."""
    scene.submit(mpijob("young", workers=1, run_policy={**ALL, "ttlSecondsAfterFinished": 3600}))
    scene.put_status("young", _succeeded(scene, "young", finished_seconds_ago=30))
    await scene.settled()
    scene.h.writer.writes.clear()

    result = await scene.h.controller.syncer.sync(scene.key("young"))

    assert scene.h.writer.writes == []
    assert result.requeue_after is not None and 3500 < result.requeue_after <= 3570
    assert scene.get("mpijobs", "young") is not None


async def test_scale_down_skips_a_worker_pod_without_an_index_label(scene: Scene) -> None:
    """D5 #5: upstream stops the scale-down at a worker pod without the replica-index label, so the
    surplus workers stay; we ignore that one pod and remove the surplus."""
    scene.submit(mpijob("shrink", workers=3, run_policy=ALL))
    # Named to sort before the real workers, so it is met first: upstream's loop would stop right there.
    stray = worker_pod.new_worker(scene.defaulted("shrink"), 0)
    stray["metadata"]["name"] = "shrink-stray"
    del stray["metadata"]["labels"][api.LABEL_REPLICA_INDEX]
    scene.rest.create(scene.path("pods"), stray)
    await scene.sync("shrink")
    scene.patch_spec("shrink", {"spec": {"mpiReplicaSpecs": {"Worker": {"replicas": 1}}}})

    writes = await scene.sync("shrink")

    deletes = sorted(name for verb, plural, name in writes if (verb, plural) == ("delete", "pods"))
    assert deletes == ["shrink-worker-1", "shrink-worker-2"]
    await scene.until_true(
        lambda: (
            sorted(p["metadata"]["name"] for p in scene.items("pods")) == ["shrink-stray", "shrink-worker-0"]
        ),
        "only the surplus indexed workers deleted",
    )


async def test_a_watch_event_enqueues_a_backed_off_job_at_once(scene: Scene) -> None:
    """D5 #4: upstream adds every event through the rate limiter, so a job with failed syncs behind it
    waits out its backoff even when the user changes it; a plain add queues the change now."""
    scene.submit(mpijob("busy", workers=1, run_policy=ALL))
    queue = scene.h.controller.queue
    key = scene.key("busy")
    await scene.until_true(lambda: len(queue) == 1, "the new job queued")
    taken, _ = await queue.get()
    assert taken == key
    queue.done(key)
    for _ in range(12):  # twelve failed syncs behind it: 5 ms doubled twelve times, about 20 s
        queue.rate_limiter.when(key)
    queue.add_rate_limited(key)
    assert len(queue) == 0 and queue.waiting == 1

    scene.patch_spec("busy", {"spec": copy.deepcopy({"slotsPerWorker": 2})})

    await scene.until_true(lambda: len(queue) == 1, "the changed job queued without waiting", timeout=3)
