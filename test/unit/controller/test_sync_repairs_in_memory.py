"""One sync against in-memory caches, for the sync handler's smaller decisions: a job being deleted is
left alone, children that drifted are put back, a launcher template's restartPolicy is overridden with
upstream's warning, and what `mpi_operator_jobs_failed_total` counts. Exact writes asserted, as in
test_sync_in_memory.py."""

from __future__ import annotations

import copy
from collections.abc import Callable

import pytest

from mpioperator.api.objects import Obj
from mpioperator.controller.builders import configmap, secret
from mpioperator.controller.errors import SyncError
from mpioperator.kube import errors
from mpioperator.kube.resources import Resource
from test.unit.controller.sync_fixtures import (
    EARLIER,
    NOW,
    RecordingWriter,
    Scene,
    job,
    job_children,
    launcher,
    launcher_pod,
    running_children,
    running_job,
    running_scene,
    shared_children,
    true_condition,
    worker,
)

RESTART_POLICY_WARNING = (
    "Warning",
    "SetPodTemplateRestartPolicy",
    "Restart policy in pod template overridden by restart policy in replica spec",
)


def child_writes(scene: Scene) -> list[tuple[str, str, str]]:
    """The writes to anything but the MPIJob itself."""
    return [call for call in scene.writer.calls if call[1] != "mpijobs"]


def running_after(pi: Obj, kind: str, edit: Callable[[Obj], None]) -> Scene:
    """`pi` running with its two workers and every child in place, after `edit` changed its child of
    `kind` as someone else might have."""
    children = running_children(pi, worker(pi, 0), worker(pi, 1))
    for child in children:
        if child["kind"] == kind:
            edit(child)
    return Scene(pi, *children)


# --- a job being deleted --------------------------------------------------------------------------------


async def test_job_being_deleted_is_left_alone_without_a_write_or_an_event() -> None:
    """Its children go with it (garbage collection): making them now would only race the collector."""
    pi = job(workers=2)
    pi["metadata"]["deletionTimestamp"] = NOW
    pi["metadata"]["finalizers"] = ["example.com/keep"]
    scene = Scene(pi)

    result = await scene.sync()

    assert scene.writer.calls == []
    assert scene.recorder.events == []
    assert result.requeue_after is None


# --- children that drifted are put back -------------------------------------------------------------------


async def test_service_whose_selector_was_changed_gets_upstreams_selector_back() -> None:
    def edit(service: Obj) -> None:
        service["spec"]["selector"] = {"app": "someone-else"}
        service["metadata"]["annotations"] = {"someone/else": "kept"}

    scene = running_after(running_job(), "Service", edit)

    await scene.sync()

    assert scene.writer.calls == [("update", "services", "pi")]
    sent = scene.writer.body("update", "services", "pi")
    assert sent["spec"]["selector"] == {
        "training.kubeflow.org/operator-name": "mpi-operator",
        "training.kubeflow.org/job-name": "pi",
    }
    # Only the two reconciled fields are replaced; the rest of the Service is left as found.
    assert sent["metadata"]["annotations"] == {"someone/else": "kept"}


@pytest.mark.parametrize("launcher_as_worker", [False, True])
async def test_service_whose_publish_not_ready_addresses_was_flipped_gets_it_back(
    launcher_as_worker: bool,
) -> None:
    pi = running_job()
    pi["spec"]["runLauncherAsWorker"] = launcher_as_worker

    def flip(service: Obj) -> None:
        service["spec"]["publishNotReadyAddresses"] = not launcher_as_worker

    scene = running_after(pi, "Service", flip)

    await scene.sync()

    assert child_writes(scene) == [("update", "services", "pi")]
    sent = scene.writer.body("update", "services", "pi")
    # False goes as null, which the API server stores as false (the field is omitempty).
    assert bool(sent["spec"]["publishNotReadyAddresses"]) is launcher_as_worker


async def test_ssh_secret_of_ours_missing_a_key_gets_a_complete_pair() -> None:
    def drop_public_key(ssh: Obj) -> None:
        del ssh["data"][secret.PUBLIC_KEY]

    scene = running_after(running_job(), "Secret", drop_public_key)

    await scene.sync()

    # Read whole first: the cache keeps key names only, and the update replaces the whole Secret.
    assert scene.writer.calls == [("get", "secrets", "pi-ssh"), ("update", "secrets", "pi-ssh")]
    sent = scene.writer.body("update", "secrets", "pi-ssh")
    assert sorted(sent["data"]) == [secret.PRIVATE_KEY, secret.PUBLIC_KEY]
    assert sent["metadata"]["uid"] == "secret"  # the same Secret, repaired


async def test_ssh_secret_of_ours_with_both_keys_is_never_rewritten_whatever_their_values() -> None:
    """Upstream compares the key names only, so keys never rotate (D5 #6)."""

    def odd_values(ssh: Obj) -> None:
        ssh["data"] = {secret.PRIVATE_KEY: "", secret.PUBLIC_KEY: "bm90IGEga2V5"}

    scene = running_after(running_job(), "Secret", odd_values)

    await scene.sync()

    assert scene.writer.calls == []


# --- a cache behind the server ------------------------------------------------------------------------------


class ServerVersions(RecordingWriter):
    """Refuses an update whose resourceVersion is not the one `get` serves, as the API server does."""

    async def update(self, res: Resource, body: Obj, namespace: str | None = None) -> Obj:
        served = self.served.get((res.plural, body["metadata"]["name"]))
        if (
            served is not None
            and served["metadata"]["resourceVersion"] != body["metadata"]["resourceVersion"]
        ):
            self._record("update", res, body["metadata"]["name"], body)
            raise errors.Conflict(409, "Conflict", "the object has been modified")
        return await super().update(res, body, namespace)


def scene_whose_config_map_cache_lags(server_has: list[int]) -> tuple[Scene, Obj]:
    """`pi` running with both workers; the cache still holds the ConfigMap made before any ran, while
    the server holds the version an earlier sync wrote for the workers of these indices."""
    pi = running_job()
    pods = [worker(pi, 0), worker(pi, 1)]
    the_launcher = launcher(pi)
    children = [*shared_children(pi, []), *pods, the_launcher, launcher_pod(pi, the_launcher)]
    newer = configmap.new_config_map(pi, [pods[i] for i in server_has])
    cached = next(c for c in children if c["kind"] == "ConfigMap")
    newer["metadata"].update(uid=cached["metadata"]["uid"], resourceVersion="6")
    writer = ServerVersions()
    writer.served[("configmaps", "pi-config")] = newer
    return Scene(pi, *children, writer=writer), pi


async def test_config_map_update_refused_for_a_lagging_cache_is_applied_to_the_servers_version() -> None:
    scene, pi = scene_whose_config_map_cache_lags([0])

    await scene.sync()

    assert child_writes(scene) == [
        ("update", "configmaps", "pi-config"),
        ("get", "configmaps", "pi-config"),
        ("update", "configmaps", "pi-config"),
    ]
    retried = [c.body for c in scene.writer.log if c.verb == "update" and c.resource == "configmaps"][1]
    assert retried is not None and retried["metadata"]["resourceVersion"] == "6"
    both = configmap.new_config_map(pi, [worker(pi, 0), worker(pi, 1)])
    assert retried["data"] == both["data"]
    assert [e for e in scene.recorder.events if e[0] == "Warning"] == []


async def test_config_map_already_right_on_the_server_is_not_written_again_after_a_conflict() -> None:
    scene, _ = scene_whose_config_map_cache_lags([0, 1])

    await scene.sync()

    assert child_writes(scene) == [
        ("update", "configmaps", "pi-config"),
        ("get", "configmaps", "pi-config"),
    ]


class CompletedMeanwhile(ServerVersions):
    """Serves the Secret as it was, then someone else completes it before our update arrives."""

    def __init__(self, complete: Obj) -> None:
        super().__init__()
        self.complete = complete

    async def get(self, res: Resource, name: str, namespace: str | None = None) -> Obj:
        found = await super().get(res, name, namespace)
        self.served[(res.plural, name)] = self.complete
        return found


async def test_ssh_secret_completed_by_someone_else_during_our_repair_is_not_given_new_keys() -> None:
    pi = running_job()
    children = running_children(pi, worker(pi, 0), worker(pi, 1))
    incomplete = next(c for c in children if c["kind"] == "Secret")
    complete = copy.deepcopy(incomplete)
    complete["metadata"]["resourceVersion"] = "6"
    del incomplete["data"][secret.PUBLIC_KEY]
    scene = Scene(pi, *children, writer=CompletedMeanwhile(complete))

    with pytest.raises(SyncError):
        await scene.sync()

    # Refused once, then left for the retried sync, which finds the Secret complete and keeps it.
    assert [c for c in child_writes(scene) if c[1] == "secrets"] == [
        ("get", "secrets", "pi-ssh"),
        ("update", "secrets", "pi-ssh"),
    ]


# --- the launcher template's restartPolicy ------------------------------------------------------------------


async def test_launcher_template_restart_policy_is_overridden_with_a_warning_when_the_launcher_is_made() -> (
    None
):
    pi = job(workers=1)
    pi["spec"]["mpiReplicaSpecs"]["Launcher"]["template"]["spec"]["restartPolicy"] = "Always"
    scene = Scene(pi)

    await scene.sync()

    made = scene.writer.body("create", "jobs", "pi-launcher")
    assert made["spec"]["template"]["spec"]["restartPolicy"] == "OnFailure"  # the replica's
    assert RESTART_POLICY_WARNING in scene.recorder.events


async def test_launcher_template_restart_policy_warning_is_repeated_when_the_launcher_resumes() -> None:
    """Upstream builds the template again at a resume, and warns again."""
    pi = job(workers=1)
    pi["spec"]["mpiReplicaSpecs"]["Launcher"]["template"]["spec"]["restartPolicy"] = "Always"
    pods = [worker(pi, 0)]
    scene = Scene(pi, *shared_children(pi, pods), *pods, launcher(pi, suspended=True))

    await scene.sync()

    assert ("update", "jobs", "pi-launcher") in scene.writer.calls
    assert scene.writer.body("update", "jobs", "pi-launcher")["spec"]["suspend"] is False
    assert RESTART_POLICY_WARNING in scene.recorder.events


async def test_worker_template_restart_policy_is_overridden_without_a_warning() -> None:
    """Upstream warns for the launcher's template only; a worker's is replaced silently."""
    pi = job(workers=1)
    pi["spec"]["mpiReplicaSpecs"]["Worker"]["template"]["spec"]["restartPolicy"] = "Always"
    scene = Scene(pi)

    await scene.sync()

    assert scene.writer.body("create", "pods", "pi-worker-0")["spec"]["restartPolicy"] == "Never"
    assert RESTART_POLICY_WARNING not in scene.recorder.events


# --- mpi_operator_jobs_failed_total -----------------------------------------------------------------------


async def test_job_whose_launcher_failed_is_counted_once_in_jobs_failed_total() -> None:
    """Once, also when the next sync comes before the cache shows the status write that failed it."""
    pi = running_job(1)
    pi["metadata"]["resourceVersion"] = "7"
    pods = [worker(pi, 0)]
    failed = launcher(pi, "Failed", failed=1)
    scene = Scene(pi, *job_children(pi, *pods, the_launcher=failed, launcher_phase="Failed"))

    await scene.sync()
    assert scene.counter("mpi_operator_jobs_failed") == 1
    await scene.sync()  # the cache still shows the job running
    pi["status"] = scene.written_status()  # now the cache shows the write
    pi["metadata"]["resourceVersion"] = "8"
    await scene.sync()

    assert scene.counter("mpi_operator_jobs_failed") == 1


async def test_evicted_job_is_failed_but_left_out_of_jobs_failed_total() -> None:
    """Upstream counts launcher failures only (docs/observe.md): an eviction fails the job without it."""
    pi = running_job()
    evicted = worker(pi, 1, "Failed", reason="Evicted", message="The node was low on memory.")
    scene = running_scene(pi, worker(pi, 0), evicted)

    await scene.sync()

    failed = [c for c in scene.written_status()["conditions"] if c["type"] == "Failed"]
    assert [(c["status"], c["reason"]) for c in failed] == [("True", "MPIJobEvicted")]
    assert scene.counter("mpi_operator_jobs_failed") == 0


async def test_job_failed_by_the_worker_startup_deadline_is_counted_in_jobs_failed_total() -> None:
    """Ours (docs/extensions.md): a job whose workers never came up failed, and is counted as failed."""
    created = true_condition("Created", "MPIJobCreated", "MPIJob default/pi is created.", EARLIER)
    pi = job(workers=1, status={"conditions": [created], "startTime": EARLIER})
    pi["metadata"]["annotations"] = {"mpioperator.io/worker-startup-deadline-seconds": "60"}
    pods = [worker(pi, 0, "Pending", ready=False)]
    scene = Scene(pi, *shared_children(pi), *pods, launcher(pi))

    await scene.sync()

    failed = [c for c in scene.written_status()["conditions"] if c["type"] == "Failed"]
    assert [(c["status"], c["reason"]) for c in failed] == [("True", "WorkerStartupDeadlineExceeded")]
    assert scene.counter("mpi_operator_jobs_failed") == 1
