"""A sync whose caches lag the API server, on a real API server: a new leader's first syncs after a
restart or a leader change, when the children the earlier leader made are on the server but not yet in
the new leader's caches, and a finished job past its TTL that the cache still shows as it was.

Every create then meets AlreadyExists, and what the server holds decides: a child of ours is kept as
it is (no second launcher, no new SSH keys the running workers would not know), one that is missing
keys is repaired, one that is not ours is refused with ErrResourceExists and never adopted. The TTL
delete only ever deletes the job the cache showed: one already gone is no error, and one re-created
under the same name stays.

The lag is made, not waited for: the new leader's listers read the controller's real informers but do
not show the objects a test names (as a cache whose watch has not delivered them yet), or show an
object as it was before the test changed it on the server.
"""

from __future__ import annotations

import copy
from collections.abc import AsyncIterator, Collection, Mapping
from typing import Any

import pytest
import pytest_asyncio

from mpioperator.api.objects import Obj
from mpioperator.clock import RealClock
from mpioperator.controller.errors import SyncError
from mpioperator.controller.features import default_features
from mpioperator.controller.listers import StoreLister
from mpioperator.controller.ports import Lister, Listers
from mpioperator.controller.sync import JobSyncer, SyncResult
from mpioperator.kube.resources import CONFIG_MAPS, JOBS, MPIJOBS, PODS, SECRETS, SERVICES, Resource
from mpioperator.testing.cluster import LocalCluster
from mpioperator.testing.mpijobs import mpijob
from test.integration.controller.test_upstream_sync_scenarios import (
    NOT_OURS,
    Scene,
    Write,
    _ago,
    _foreign,
    informers_only,
)

# (plural, name): an object the lagging cache has not seen yet.
Unseen = Collection[tuple[str, str]]
_LISTED: dict[str, Resource] = {
    "mpijobs": MPIJOBS,
    "pods": PODS,
    "jobs": JOBS,
    "config_maps": CONFIG_MAPS,
    "secrets": SECRETS,
    "services": SERVICES,
}


@pytest_asyncio.fixture
async def scene(mpijob_crd: LocalCluster, make_namespace: Any) -> AsyncIterator[Scene]:
    """The controller's informers on a namespace of its own, and no worker: only the test syncs."""
    async with informers_only(mpijob_crd, make_namespace(mpijob_crd)) as h:
        yield Scene(h)


class Lagging:
    """One informer's lister as a cache behind the server: the `unseen` names are missing, the `stale`
    objects are shown as they were."""

    def __init__(self, inner: Lister, unseen: Collection[str], stale: Collection[Obj]) -> None:
        self._inner = inner
        self._unseen = set(unseen)
        self._stale = {o["metadata"]["name"]: o for o in stale}

    def _seen(self, obj: Obj) -> bool:
        return obj["metadata"]["name"] not in self._unseen

    def get(self, namespace: str, name: str) -> Obj | None:
        if name in self._stale:
            return self._stale[name]
        return None if name in self._unseen else self._inner.get(namespace, name)

    def select(self, namespace: str, labels: Mapping[str, str]) -> list[Obj]:
        return [o for o in self._inner.select(namespace, labels) if self._seen(o)]

    def owned_by(self, uid: str) -> list[Obj]:
        return [o for o in self._inner.owned_by(uid) if self._seen(o)]


def new_leader(scene: Scene, unseen: Unseen = (), stale_jobs: Collection[Obj] = ()) -> JobSyncer:
    """A sync handler as a newly elected leader has it: no memory of earlier syncs, lagging caches that
    miss the `unseen` objects and show the MPIJobs `stale_jobs` as they were."""
    informers = scene.h.controller.factory

    def lagging(res: Resource) -> Lister:
        hidden = [name for plural, name in unseen if plural == res.plural]
        stale = stale_jobs if res is MPIJOBS else ()
        return Lagging(StoreLister([informers.informer(res, scene.ns)]), hidden, stale)

    listers = Listers(**{attr: lagging(res) for attr, res in _LISTED.items()})
    h = scene.h
    return JobSyncer(
        listers,
        h.writer,
        h.controller.recorder,
        h.metrics,
        utcnow=RealClock().utcnow,
        features=default_features,
    )


async def sync_as_new_leader(
    scene: Scene, job: str, unseen: Unseen = (), stale_jobs: Collection[Obj] = ()
) -> tuple[list[Write], SyncResult]:
    """One sync of `job` by a new leader on settled (then lagged) caches: its writes, Events left out."""
    await scene.settled()
    syncer = new_leader(scene, unseen, stale_jobs)
    scene.h.writer.writes.clear()
    result = await syncer.sync(scene.key(job))
    await scene.h.controller.recorder.flush()
    return [w for w in scene.h.writer.writes if w[1] != "events"], result


def children_of(job: str, workers: int) -> list[tuple[str, str]]:
    pods = [("pods", f"{job}-worker-{i}") for i in range(workers)]
    return [("services", job), ("configmaps", f"{job}-config"), ("secrets", f"{job}-ssh"), *pods]


def versions(scene: Scene, objects: Collection[tuple[str, str]]) -> dict[tuple[str, str], str]:
    found = {key: scene.get(*key) for key in objects}
    return {key: obj["metadata"]["resourceVersion"] for key, obj in found.items() if obj is not None}


# --- children the earlier leader made ---------------------------------------------------------------


async def test_new_leader_that_has_not_seen_the_children_keeps_them_and_the_ssh_keys_as_they_are(
    scene: Scene,
) -> None:
    """The earlier leader made every child; the new leader's caches show none of them. Each create meets
    AlreadyExists and the object on the server is kept as it is: no update, no second launcher, and
    above all the same SSH keys, which the running workers already hold as authorized_keys (new keys
    would leave the launcher with "Permission denied (publickey)")."""
    scene.submit(mpijob("x", workers=2))
    await scene.sync("x")  # the earlier leader
    made = [*children_of("x", 2), ("jobs", "x-launcher")]
    before = versions(scene, made)
    assert sorted(before) == sorted(made)
    keys = (scene.get("secrets", "x-ssh") or {})["data"]

    writes, result = await sync_as_new_leader(scene, "x", unseen=made)

    assert writes == [("create", plural, name) for plural, name in made]  # each met AlreadyExists
    assert versions(scene, made) == before
    assert (scene.get("secrets", "x-ssh") or {})["data"] == keys
    assert scene.names("jobs") == ["x-launcher"]
    assert scene.recorded("x") == [("Normal", "MPIJobCreated", f"MPIJob {scene.ns}/x is created.")]
    assert result.requeue_after is None


async def test_new_leader_repairs_an_ssh_secret_of_ours_that_lost_a_key(scene: Scene) -> None:
    """Only a Secret missing keys gets new ones (upstream compares the key names, never the values)."""
    scene.submit(mpijob("x", workers=1))
    await scene.sync("x")
    secret = scene.get("secrets", "x-ssh") or {}
    del secret["data"]["ssh-publickey"]
    scene.rest.request("PUT", scene.path("secrets", "x-ssh"), secret)

    writes, _ = await sync_as_new_leader(scene, "x", unseen=[("secrets", "x-ssh")])

    assert writes == [("create", "secrets", "x-ssh"), ("update", "secrets", "x-ssh")]
    repaired = scene.get("secrets", "x-ssh") or {}
    assert sorted(repaired["data"]) == ["ssh-privatekey", "ssh-publickey"]
    assert repaired["metadata"]["uid"] == secret["metadata"]["uid"]


@pytest.mark.parametrize(
    ("what", "refused", "kind"),
    [
        ("service", "x", "Service"),
        ("configmap", "x-config", "ConfigMap"),
        ("secret", "x-ssh", "Secret"),
        ("worker", "x-worker-0", "Pod"),
        ("launcher", "x-launcher", "Job"),
    ],
)
async def test_new_leader_refuses_an_unseen_object_in_the_way_that_is_not_ours_and_leaves_it_alone(
    scene: Scene, what: str, refused: str, kind: str
) -> None:
    """An object with a child's name that is not controlled by the job, which the cache has not seen:
    the create meets AlreadyExists, the object read back is not ours, and the sync fails with upstream's
    ErrResourceExists message and event. The object is never adopted, updated or deleted; the launcher
    Job in particular is not taken over (L4 names its real kind)."""
    scene.submit(mpijob("x", workers=2))
    theirs = _foreign(scene, what, "x")
    before = versions(scene, theirs)

    with pytest.raises(SyncError) as failed:
        await sync_as_new_leader(scene, "x", unseen=theirs)
    await scene.h.controller.recorder.flush()

    error = NOT_OURS.format(refused, kind)
    assert str(failed.value) == error
    assert ("Warning", "ErrResourceExists", error) in scene.recorded("x")
    plural = theirs[0][0]
    touching = [w for w in scene.h.writer.writes if w[1] == plural and (plural, w[2]) in theirs]
    assert set(touching) <= {("create", plural, name) for _, name in theirs}  # the create that met it
    assert versions(scene, theirs) == before
    for key in theirs:
        assert not (scene.get(*key) or {})["metadata"].get("ownerReferences")


# --- the TTL delete of a job the cache shows as it was ----------------------------------------------


async def _finished_past_its_ttl(scene: Scene, job: str) -> Obj:
    """`job`, finished a while ago with a TTL of 0 and cleaned up, as the cache shows it."""
    scene.submit(mpijob(job, workers=1, run_policy={"ttlSecondsAfterFinished": 0}))
    created = {"type": "Created", "status": "True", "reason": "MPIJobCreated", "message": "created"}
    succeeded = {"type": "Succeeded", "status": "True", "reason": "MPIJobSucceeded", "message": "done"}
    for cond in (created, succeeded):
        cond["lastTransitionTime"] = cond["lastUpdateTime"] = _ago(30)
    status = {
        "conditions": [created, succeeded],
        "startTime": _ago(60),
        "completionTime": _ago(30),
        "replicaStatuses": {"Launcher": {"succeeded": 1}, "Worker": {}},  # its workers cleaned up
    }
    scene.put_status(job, status)
    await scene.settled()
    cached = scene.cached(MPIJOBS, job)
    assert cached is not None and cached.get("status", {}).get("completionTime")
    return copy.deepcopy(cached)


async def _deleted(scene: Scene, job: str) -> None:
    scene.rest.delete(scene.path("mpijobs", job))
    await scene.until_true(lambda: scene.get("mpijobs", job) is None, f"{job} gone")


async def test_ttl_delete_of_a_job_already_gone_is_no_error_and_no_retry(scene: Scene) -> None:
    stale = await _finished_past_its_ttl(scene, "x")
    await _deleted(scene, "x")

    writes, result = await sync_as_new_leader(scene, "x", stale_jobs=[stale])

    assert writes == [("delete", "mpijobs", "x")]  # answered 404: nothing left to do
    assert result.requeue_after is None


async def test_ttl_delete_leaves_a_job_re_created_under_the_same_name_alone(scene: Scene) -> None:
    """The cache still shows the finished job; the server holds a new job of that name. The delete names
    the old job's uid, so the server refuses it (409) and the new job stays; the sync ends without an
    error, as the job it meant to delete is gone."""
    stale = await _finished_past_its_ttl(scene, "x")
    await _deleted(scene, "x")
    new_uid = scene.submit(mpijob("x", workers=1))["metadata"]["uid"]

    writes, result = await sync_as_new_leader(scene, "x", stale_jobs=[stale])

    assert writes == [("delete", "mpijobs", "x")]
    found = scene.get("mpijobs", "x")
    assert found is not None, "the re-created job was deleted"
    assert found["metadata"]["uid"] == new_uid
    assert result.requeue_after is None
