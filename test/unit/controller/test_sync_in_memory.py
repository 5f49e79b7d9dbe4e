"""One sync of one job against in-memory caches, asserting the exact writes (sample-controller's style).

The upstream scenarios whose outcome is the sync handler's own decision; the same scenarios run against
a real API server in test/integration/controller/test_upstream_sync_scenarios.py, which also covers what
needs the server (conflicts, caches catching up, garbage collection, admission).
"""

from __future__ import annotations

import asyncio
import copy

import pytest

from mpioperator.api.extensions.parsed import parse
from mpioperator.api.objects import Obj
from mpioperator.controller.errors import SyncError
from mpioperator.controller.pod_cache import slim_pod
from mpioperator.kube import errors
from mpioperator.kube.resources import Resource
from mpioperator.testing.wait import async_wait_for
from test.unit.controller.sync_fixtures import (
    CREATED,
    NOW,
    SHARED_CREATES,
    RecordingWriter,
    Scene,
    foreign_service,
    job,
    job_children,
    launcher,
    launcher_pod,
    running_job,
    running_scene,
    shared_children,
    worker,
)

# --- a new job ---------------------------------------------------------------------------------------


async def test_created_workers_are_handed_on_as_the_pod_cache_keeps_pods_not_whole() -> None:
    """The API server answers a create with the whole pod, spec and managed fields included; what the sync
    keeps of a job's workers (until their next change) holds only what the pod cache would."""
    pi = job(workers=2)
    scene = Scene(pi, *shared_children(pi))
    ext = parse(pi)

    made = await scene.syncer._children.workers(pi, ext)

    created = [c.body for c in scene.writer.log if c.verb == "create" and c.resource == "pods"]
    assert [p["metadata"]["name"] for p in made] == ["pi-worker-0", "pi-worker-1"]
    assert all(body is not None and body["spec"]["containers"] for body in created)
    assert all("containers" not in p.get("spec", {}) for p in made), made
    assert [p["metadata"]["uid"] for p in made] == ["created-1", "created-2"]
    assert made == [slim_pod(p) for p in made]  # nothing left to drop


async def test_new_job_creates_service_configmap_secret_workers_launcher_then_writes_status() -> None:
    scene = Scene(job(workers=3))

    await scene.sync()

    assert scene.writer.calls == [
        *SHARED_CREATES,
        ("create", "pods", "pi-worker-0"),
        ("create", "pods", "pi-worker-1"),
        ("create", "pods", "pi-worker-2"),
        ("create", "jobs", "pi-launcher"),
        ("update_status", "mpijobs", "pi"),
    ]
    status = scene.written_status()
    assert [(c["type"], c["status"], c["reason"]) for c in status["conditions"]] == [
        ("Created", "True", "MPIJobCreated")
    ]
    assert status["startTime"] == NOW
    assert status["replicaStatuses"] == {"Launcher": {}, "Worker": {}}
    assert scene.writer.body("create", "jobs", "pi-launcher")["spec"].get("suspend") is None
    assert scene.recorder.events == [CREATED]


class HeldCreates(RecordingWriter):
    """Holds every create until released, and remembers which were asked for meanwhile."""

    def __init__(self) -> None:
        super().__init__()
        self.release = asyncio.Event()

    async def create(self, res: Resource, body: Obj, namespace: str | None = None) -> Obj:
        self._record("create", res, body["metadata"]["name"], body)
        await self.release.wait()
        return await super().create(res, body, namespace)

    def _record(self, verb: str, res: Resource, name: str, body: Obj | None) -> None:
        # super().create records the call again once released: the first record stands.
        if not any(c.name == name and c.verb == verb for c in self.log):
            super()._record(verb, res, name, body)


async def test_a_new_jobs_service_configmap_and_secret_are_asked_for_together() -> None:
    writer = HeldCreates()
    scene = Scene(job(workers=2), writer=writer)
    syncing = asyncio.create_task(scene.sync())

    async def three_asked() -> bool:
        return len(writer.calls) == 3

    await async_wait_for(three_asked, timeout=5, what="the shared children's creates", interval=0.001)
    assert writer.calls == SHARED_CREATES  # all three on the wire, none answered yet, in upstream's order
    writer.release.set()
    await syncing
    assert writer.calls[3:] == [
        ("create", "pods", "pi-worker-0"),
        ("create", "pods", "pi-worker-1"),
        ("create", "jobs", "pi-launcher"),
        ("update_status", "mpijobs", "pi"),
    ]


async def test_a_failure_among_a_new_jobs_shared_children_is_raised_after_all_three_were_asked() -> None:
    class RefusesTheConfigMap(RecordingWriter):
        async def create(self, res: Resource, body: Obj, namespace: str | None = None) -> Obj:
            if res.plural == "configmaps":
                self._record("create", res, body["metadata"]["name"], body)
                raise errors.ApiError(500, "InternalError", "etcd is slow")
            return await super().create(res, body, namespace)

    scene = Scene(job(workers=1), writer=RefusesTheConfigMap())

    with pytest.raises(SyncError, match="etcd is slow"):
        await scene.sync()

    # No worker or launcher follows, and a sync that fails writes no status (L42).
    assert scene.writer.calls == SHARED_CREATES


async def test_converged_running_job_makes_no_write() -> None:
    pi = running_job()
    scene = running_scene(pi, worker(pi, 0), worker(pi, 1))

    await scene.sync()

    assert scene.writer.calls == []
    assert scene.recorder.events == []


async def test_suspended_job_creates_a_suspended_launcher_and_no_pods() -> None:
    scene = Scene(job(workers=2, suspend=True))

    await scene.sync()

    assert scene.writer.calls == [
        *SHARED_CREATES,
        ("create", "jobs", "pi-launcher"),
        ("update_status", "mpijobs", "pi"),
    ]
    assert scene.writer.body("create", "jobs", "pi-launcher")["spec"]["suspend"] is True
    status = scene.written_status()
    assert [(c["type"], c["status"], c["reason"]) for c in status["conditions"]] == [
        ("Created", "True", "MPIJobCreated"),
        ("Suspended", "True", "MPIJobSuspended"),
        ("Running", "False", "MPIJobSuspended"),
    ]
    assert "startTime" not in status
    assert [reason for _, reason, _ in scene.recorder.events] == ["MPIJobCreated", "MPIJobSuspended"]


# --- WaitForWorkersReady -------------------------------------------------------------------------------


async def test_wait_for_workers_ready_creates_the_workers_but_not_the_launcher() -> None:
    pi = job(workers=2)
    pi["spec"]["launcherCreationPolicy"] = "WaitForWorkersReady"
    scene = Scene(pi)

    await scene.sync()

    assert scene.writer.calls == [
        *SHARED_CREATES,
        ("create", "pods", "pi-worker-0"),
        ("create", "pods", "pi-worker-1"),
        ("update_status", "mpijobs", "pi"),
    ]


async def test_wait_for_workers_ready_still_waits_while_one_worker_is_not_ready() -> None:
    pi = job(workers=2)
    pi["spec"]["launcherCreationPolicy"] = "WaitForWorkersReady"
    ready, pending = worker(pi, 0), worker(pi, 1, "Pending", ready=False)
    scene = Scene(pi, *shared_children(pi, [ready]), ready, pending)

    await scene.sync()

    assert ("create", "jobs", "pi-launcher") not in scene.writer.calls
    assert [call for call in scene.writer.calls if call[0] != "update_status"] == []


async def test_wait_for_workers_ready_creates_the_launcher_once_every_worker_is_ready() -> None:
    pi = job(workers=2)
    pi["spec"]["launcherCreationPolicy"] = "WaitForWorkersReady"
    pods = [worker(pi, 0), worker(pi, 1)]
    scene = Scene(pi, *shared_children(pi, pods), *pods)

    await scene.sync()

    assert scene.writer.calls == [("create", "jobs", "pi-launcher"), ("update_status", "mpijobs", "pi")]


# --- the launcher or a worker ends ------------------------------------------------------------------------


async def test_launcher_succeeded_makes_the_job_succeeded_with_the_launchers_completion_time() -> None:
    pi = running_job()
    pods = [worker(pi, 0), worker(pi, 1)]
    done = launcher(pi, "Complete", completionTime="2026-01-01T00:00:00Z")
    scene = Scene(pi, *job_children(pi, *pods, the_launcher=done, launcher_phase="Succeeded"))

    await scene.sync()

    assert scene.writer.calls == [("update_status", "mpijobs", "pi")]
    status = scene.written_status()
    assert [(c["type"], c["status"], c["reason"]) for c in status["conditions"]] == [
        ("Created", "True", "MPIJobCreated"),
        ("Running", "False", "MPIJobRunning"),
        ("Succeeded", "True", "MPIJobSucceeded"),
    ]
    assert status["completionTime"] == "2026-01-01T00:00:00Z"
    assert status["replicaStatuses"]["Launcher"] == {"succeeded": 1}
    assert scene.recorder.events == [
        ("Normal", "MPIJobSucceeded", "MPIJob default/pi successfully completed.")
    ]


async def test_launcher_failed_makes_the_job_failed_with_the_jobs_reason() -> None:
    pi = running_job(1)
    pods = [worker(pi, 0)]
    failed = launcher(pi, "Failed", failed=1)
    failed["status"]["conditions"][0].update(reason="DeadlineExceeded", message="Job was active too long")
    scene = Scene(pi, *shared_children(pi, pods), *pods, failed)

    await scene.sync()

    assert scene.writer.calls == [("update_status", "mpijobs", "pi")]
    status = scene.written_status()
    failed_condition = [c for c in status["conditions"] if c["type"] == "Failed"]
    assert [(c["status"], c["reason"], c["message"]) for c in failed_condition] == [
        ("True", "DeadlineExceeded", "Job was active too long")
    ]
    assert status["completionTime"] == NOW
    assert scene.recorder.events == [("Warning", "DeadlineExceeded", "Job was active too long")]


async def test_evicted_worker_fails_the_job_as_evicted_and_finishes_it() -> None:
    pi = running_job()
    evicted = worker(pi, 1, "Failed", reason="Evicted", message="The node was low on memory.")
    scene = running_scene(pi, worker(pi, 0), evicted)

    await scene.sync()

    assert scene.writer.calls == [("update_status", "mpijobs", "pi")]
    status = scene.written_status()
    failed = [c for c in status["conditions"] if c["type"] == "Failed"]
    assert [(c["status"], c["reason"], c["message"]) for c in failed] == [
        ("True", "MPIJobEvicted", "1/2 workers are evicted")
    ]
    assert status["completionTime"] == NOW
    assert status["replicaStatuses"]["Worker"] == {"active": 1, "failed": 1}
    assert scene.recorder.events == [("Warning", "MPIJobEvicted", "1/2 workers are evicted")]


async def test_failed_worker_that_was_not_evicted_is_counted_and_does_not_fail_the_job() -> None:
    pi = running_job()
    scene = running_scene(pi, worker(pi, 0), worker(pi, 1, "Failed", reason="Error"))

    await scene.sync()

    assert scene.writer.calls == [("update_status", "mpijobs", "pi")]
    status = scene.written_status()
    assert not [c for c in status["conditions"] if c["type"] == "Failed"]
    assert status["replicaStatuses"]["Worker"] == {"active": 1, "failed": 1}
    assert "completionTime" not in status


# --- scaling -----------------------------------------------------------------------------------------------


async def test_scale_down_deletes_the_workers_past_the_new_count() -> None:
    pi = running_job()
    pods = [worker(pi, i) for i in range(4)]
    scene = running_scene(pi, *pods)

    await scene.sync()

    deletes = [call for call in scene.writer.calls if call[0] == "delete"]
    assert deletes == [("delete", "pods", "pi-worker-2"), ("delete", "pods", "pi-worker-3")]
    assert not [call for call in scene.writer.calls if call[0] == "create"]


async def test_scale_up_creates_only_the_missing_workers_and_rewrites_the_hostfile() -> None:
    smaller = running_job()
    pods = [worker(smaller, 0), worker(smaller, 1)]
    pi = copy.deepcopy(smaller)
    pi["spec"]["mpiReplicaSpecs"]["Worker"]["replicas"] = 3
    the_launcher = launcher(pi)
    scene = Scene(pi, *shared_children(smaller, pods), *pods, the_launcher, launcher_pod(pi, the_launcher))

    await scene.sync()

    # The new worker is not running yet, so the counts and conditions stand: no status write.
    assert scene.writer.calls == [("update", "configmaps", "pi-config"), ("create", "pods", "pi-worker-2")]
    hostfile = scene.writer.body("update", "configmaps", "pi-config")["data"]["hostfile"]
    assert hostfile.splitlines() == [f"pi-worker-{i}.pi.default.svc slots=1" for i in range(3)]


# --- objects that are not ours, and keys that are not jobs ---------------------------------------------------


async def test_service_not_controlled_by_the_job_fails_the_sync_with_an_event_and_no_status_write() -> None:
    pi = job(workers=1)
    scene = Scene(pi, foreign_service())

    with pytest.raises(SyncError) as failed:
        await scene.sync()

    message = 'Resource "pi" of Kind "Service" already exists and is not managed by MPIJob'
    assert str(failed.value) == message
    # As upstream's: a sync that fails writes no status (L42).
    assert scene.writer.calls == []
    assert scene.recorder.events == [CREATED, ("Warning", "ErrResourceExists", message)]


async def test_worker_pod_of_another_owner_fails_the_sync_after_the_shared_children() -> None:
    pi = job(workers=1)
    theirs = worker(pi, 0)
    theirs["metadata"]["ownerReferences"] = [
        {"apiVersion": "v1", "kind": "ReplicaSet", "name": "rs", "uid": "rs-1", "controller": True}
    ]
    scene = Scene(pi, theirs)

    with pytest.raises(SyncError, match='Resource "pi-worker-0" of Kind "Pod" already exists'):
        await scene.sync()

    assert scene.writer.calls == SHARED_CREATES


async def test_job_managed_by_another_controller_gets_no_write() -> None:
    scene = Scene(job(workers=1, managedBy="kueue.x-k8s.io/multikueue"))

    await scene.sync()

    assert scene.writer.calls == []
    assert scene.recorder.events == []


async def test_malformed_key_and_unknown_job_are_dropped_without_a_write() -> None:
    scene = Scene(job(workers=1))

    await scene.sync("a/b/c")
    await scene.sync("default/other")

    assert scene.writer.calls == []


async def test_invalid_job_gets_a_validation_warning_and_condition_and_no_children() -> None:
    pi = job(workers=1)
    pi["spec"]["mpiReplicaSpecs"]["Worker"]["template"]["spec"]["containers"] = []
    scene = Scene(pi)

    await scene.sync()

    assert scene.writer.calls == [("update_status", "mpijobs", "pi")]
    invalid = [c for c in scene.written_status()["conditions"] if c["type"] == "Invalid"]
    assert [(c["status"], c["reason"]) for c in invalid] == [("True", "ValidationError")]
    assert [(kind, reason) for kind, reason, _ in scene.recorder.events] == [("Warning", "ValidationError")]


@pytest.mark.parametrize("deadline", ["²", "9" * 4000, "9" * 5000])
async def test_unparsable_deadline_annotation_makes_the_job_invalid_once_and_leaves_other_jobs_alone(
    deadline: str,
) -> None:
    bad = job(workers=1)
    bad["metadata"]["annotations"] = {"mpioperator.io/worker-startup-deadline-seconds": deadline}
    good = job(workers=1)
    good["metadata"].update(name="good", uid="good-uid")
    scene = Scene(bad, good)

    await scene.sync()
    status = scene.written_status()
    bad["status"] = status  # the informer brings the written status back
    await scene.sync()
    await scene.sync("default/good")

    invalid = [c for c in status["conditions"] if c["type"] == "Invalid"]
    assert [(c["status"], c["reason"]) for c in invalid] == [("True", "ValidationError")]
    assert "worker-startup-deadline-seconds" in invalid[0]["message"]
    assert [(kind, reason) for kind, reason, _ in scene.recorder.events if reason == "ValidationError"] == [
        ("Warning", "ValidationError")
    ]
    assert [c for c in scene.writer.calls if c[2] == "pi"] == [("update_status", "mpijobs", "pi")]
    assert ("create", "services", "good") in scene.writer.calls


@pytest.mark.parametrize(
    "annotation",
    ["mpioperator.io/mpirun-extra-args", "mpioperator.io/debug-command", "mpioperator.io/launcher-program"],
)
async def test_shell_words_annotation_too_long_to_read_on_the_loop_makes_the_job_invalid(
    annotation: str,
) -> None:
    pi = job(workers=1)
    launcher_container = pi["spec"]["mpiReplicaSpecs"]["Launcher"]["template"]["spec"]["containers"][0]
    launcher_container.pop("command", None)
    launcher_container.pop("args", None)
    pi["metadata"]["annotations"] = {
        "mpioperator.io/launcher-program": "/bin/true",
        annotation: "/x " * 70_000,
    }
    scene = Scene(pi)

    await scene.sync()

    assert scene.writer.calls == [("update_status", "mpijobs", "pi")]
    (invalid,) = [c for c in scene.written_status()["conditions"] if c["type"] == "Invalid"]
    assert invalid["message"] == (
        f"Found validation errors: metadata.annotations[{annotation}]: Too long: may not be more than 16384 bytes"
    )
    assert [(kind, reason) for kind, reason, _ in scene.recorder.events] == [("Warning", "ValidationError")]


class DeletedDuringLauncherCreate(RecordingWriter):
    """The job's delete event reaches the cache while the sync waits for its launcher's create."""

    scene: Scene

    async def create(self, res: Resource, body: Obj, namespace: str | None = None) -> Obj:
        made = await super().create(res, body, namespace)
        if res.plural == "jobs":
            meta = self.scene.job["metadata"]
            self.scene.memory["mpijobs"].discard(meta["namespace"], meta["name"])
        return made


async def test_a_job_deleted_during_its_sync_leaves_no_series_behind() -> None:
    writer = DeletedDuringLauncherCreate()
    scene = Scene(job(workers=1), writer=writer)
    writer.scene = scene
    # A series of the namespace from before (its delete handler, not played here, is not the only one
    # that removes it): the namespace has no job once this one is gone.
    scene.metrics.time_to_running.labels(namespace="default").observe(3)

    await scene.sync()

    assert ("create", "jobs", "pi-launcher") in scene.writer.calls  # the sync got as far as a launcher
    left = [
        (sample.name, sample.labels)
        for family in scene.metrics.registry.collect()
        for sample in family.samples
        if sample.labels.get("namespace") == "default"
    ]
    assert left == []
