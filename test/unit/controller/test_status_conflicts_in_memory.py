"""A status write that meets a newer status, and a sync that fails, in memory (decisions-local L42).

A Conflict ends the sync before the job counters of the status it could not write; the next sync computes
from the newer object, and does not record again the events the conflicted one recorded. A sync that fails
writes no status; the job's creation is still announced once per job, by whoever syncs it first.
"""

from __future__ import annotations

import copy

import pytest

from mpioperator.api.objects import Obj
from mpioperator.controller.errors import SyncError
from mpioperator.kube import errors
from mpioperator.kube.resources import Resource
from test.unit.controller.sync_fixtures import (
    CREATED,
    NOW,
    RecordingWriter,
    Scene,
    foreign_service,
    job,
    job_children,
    launcher,
    running_job,
    shared_children,
    worker,
)

THEIRS = {"type": "QuotaReserved", "status": "True", "reason": "QuotaReserved", "message": "elsewhere"}
SUCCEEDED = ("Normal", "MPIJobSucceeded", "MPIJob default/pi successfully completed.")


class NewerOnTheServer(RecordingWriter):
    """The API server holds `newer`, written by another client after our cache read the job: a status write
    with any other resourceVersion is refused with a Conflict, and `get` answers `newer`."""

    def __init__(self, newer: Obj) -> None:
        super().__init__()
        self.served[("mpijobs", newer["metadata"]["name"])] = newer

    async def update_status(self, res: Resource, body: Obj, namespace: str | None = None) -> Obj:
        current = self.served[("mpijobs", body["metadata"]["name"])]
        if body["metadata"].get("resourceVersion") != current["metadata"]["resourceVersion"]:
            self._record("update_status", res, body["metadata"]["name"], body)
            raise errors.Conflict(409, "Conflict", "the object has been modified; please apply your changes")
        written = await super().update_status(res, body, namespace)
        written["metadata"]["resourceVersion"] = str(int(current["metadata"]["resourceVersion"]) + 1)
        self.served[("mpijobs", body["metadata"]["name"])] = copy.deepcopy(written)
        return written


def _succeeding_scene() -> tuple[Scene, NewerOnTheServer]:
    """A running job whose launcher has just completed; the server has a newer version of it, with a
    condition of another client's."""
    pi = running_job()
    pi["metadata"]["resourceVersion"] = "10"
    newer = copy.deepcopy(pi)
    newer["metadata"]["resourceVersion"] = "11"
    newer["status"]["conditions"].append({**THEIRS, "lastTransitionTime": NOW, "lastUpdateTime": NOW})
    writer = NewerOnTheServer(newer)
    pods = [worker(pi, 0), worker(pi, 1)]
    done = launcher(pi, "Complete", completionTime=NOW)
    scene = Scene(pi, *job_children(pi, *pods, the_launcher=done, launcher_phase="Succeeded"), writer=writer)
    return scene, writer


async def test_a_conflicted_status_write_ends_the_sync_before_its_counts() -> None:
    scene, writer = _succeeding_scene()

    with pytest.raises(SyncError):
        await scene.sync()

    assert writer.calls == [("update_status", "mpijobs", "pi"), ("get", "mpijobs", "pi")]
    assert writer.served[("mpijobs", "pi")]["metadata"]["resourceVersion"] == "11", "written over theirs"
    assert scene.recorder.events == [SUCCEEDED]  # recorded before the write, as every status event is
    assert scene.counter("mpi_operator_jobs_successful") == 0


async def test_the_sync_after_a_conflict_computes_from_the_newer_object_and_says_each_change_once() -> None:
    scene, writer = _succeeding_scene()
    with pytest.raises(SyncError):
        await scene.sync()
    writer.log.clear()

    # The cache still shows version 10: the object read after the Conflict stands in for it.
    await scene.sync()

    assert writer.calls == [("update_status", "mpijobs", "pi")]
    sent = writer.body("update_status", "mpijobs", "pi")
    assert sent["metadata"]["resourceVersion"] == "11"
    kinds = {c["type"]: c for c in sent["status"]["conditions"]}
    assert {k: kinds["QuotaReserved"][k] for k in THEIRS} == THEIRS
    assert kinds["Succeeded"]["status"] == "True"
    assert scene.recorder.events == [SUCCEEDED]
    assert scene.counter("mpi_operator_jobs_successful") == 1


def _blocked_scene() -> Scene:
    """A new job whose Service name is taken by an object that is not the job's: every sync fails."""
    pi = job(workers=1)
    return Scene(pi, foreign_service())


async def test_a_failing_sync_writes_no_status_and_its_retries_announce_the_job_once() -> None:
    scene = _blocked_scene()
    message = 'Resource "pi" of Kind "Service" already exists and is not managed by MPIJob'

    for _ in range(3):
        with pytest.raises(SyncError, match="already exists"):
            await scene.sync()

    assert scene.writer.calls == []
    assert scene.recorder.events == [CREATED, *[("Warning", "ErrResourceExists", message)] * 3]
    assert scene.counter("mpi_operator_jobs_created") == 1


async def test_a_new_leader_does_not_announce_a_job_whose_children_an_earlier_leader_made() -> None:
    # The earlier leader's syncs made the shared children and then failed (or it lost the lease) before
    # any status was written: the job has no conditions yet.
    pi = job(workers=1)
    scene = Scene(pi, *shared_children(pi))

    await scene.sync()

    assert CREATED not in scene.recorder.events
    assert scene.counter("mpi_operator_jobs_created") == 0
    assert [c["type"] for c in scene.written_status()["conditions"]] == ["Created"]


async def test_a_job_whose_only_namesake_child_is_not_its_own_is_announced() -> None:
    scene = _blocked_scene()

    with pytest.raises(SyncError):
        await scene.sync()

    assert scene.recorder.events[0] == CREATED


async def test_a_job_with_children_and_a_status_someone_else_wrote_without_conditions_is_announced() -> None:
    # Upstream's TestLauncherSucceeded scene: start and completion times, no condition. No sync of ours
    # left that (each status it writes has Created), so nothing says the job was announced.
    pi = job(workers=1, status={"startTime": NOW})
    scene = Scene(pi, *shared_children(pi))

    await scene.sync()

    assert CREATED in scene.recorder.events
