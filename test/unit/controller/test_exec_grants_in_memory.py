"""The exec launch agent's grants follow the job's live workers (docs/extensions.md "The exec launch agent"),
decided by one sync against in-memory caches: the Role names exactly the workers that exist, are the
job's, belong to its current attempt and are not terminating; a name leaves it before the operator
deletes the pod; the finalizer revokes the grants before the job goes; a Role or RoleBinding of the
operator's name that the operator did not make is refused."""

from __future__ import annotations

import copy
from typing import Any

from mpioperator.api.extensions import restarts
from mpioperator.api.objects import Obj
from mpioperator.controller.sync import SyncSettings
from mpioperator.kube import errors
from mpioperator.kube.resources import Resource
from test.unit.controller.jobs import OWNER
from test.unit.controller.sync_fixtures import (
    EARLIER,
    RecordingWriter,
    Scene,
    failed_worker,
    finished_status,
    job,
    job_children,
    launcher,
    running_scene,
    running_status,
    worker,
)

IMAGE = "mpioperator/kubectl-delivery:latest"
ALLOWED = SyncSettings(exec_agent_image=IMAGE)
FINALIZER = "mpioperator.io/exec-grants"
GRANT_LABEL = "mpioperator.io/exec-grant"
EXEC = {"mpioperator.io/launch-agent": "exec"}


def exec_job(workers: int = 2, status: Obj | None = None, **run_policy: object) -> Obj:
    """An exec-agent job as the operator keeps it: with its finalizer (added by the first sync)."""
    made = job(workers=workers, status=status, **run_policy)
    made["metadata"]["annotations"] = dict(EXEC)
    made["metadata"]["finalizers"] = [FINALIZER]
    return made


def granted(scene: Scene) -> list[list[str]]:
    """The workers each Role write (create or update) named, in order."""
    names = []
    for call in scene.writer.log:
        if call.resource == "roles" and call.verb in ("create", "update") and call.body is not None:
            rules = call.body["rules"]
            names.append(list(rules[0]["resourceNames"]) if rules else [])
    return names


def position(scene: Scene, verb: str, resource: str, name: str | None = None) -> int:
    for i, (v, r, n) in enumerate(scene.writer.calls):
        if (v, r) == (verb, resource) and name in (None, n):
            return i
    raise AssertionError(f"no {verb} of {resource}/{name} among {scene.writer.calls}")


def last_role_write(scene: Scene) -> int:
    found = [
        i for i, (v, r, _) in enumerate(scene.writer.calls) if r == "roles" and v in ("create", "update")
    ]
    assert found, f"no Role write among {scene.writer.calls}"
    return found[-1]


def terminating(pod: Obj) -> Obj:
    pod["metadata"]["deletionTimestamp"] = EARLIER
    return pod


def ours(kind: str, name: str = "pi-launcher", **fields: Any) -> Obj:
    """A Role or RoleBinding as the operator made it."""
    return {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": kind,
        "metadata": {
            "name": name,
            "namespace": "default",
            "uid": f"{kind}-uid",
            "resourceVersion": "3",
            "labels": {"app": "pi", GRANT_LABEL: "U"},
            "ownerReferences": [dict(OWNER)],
        },
        **fields,
    }


def full_role(*workers: str) -> Obj:
    names = list(workers)
    return ours(
        "Role",
        rules=[
            {"apiGroups": [""], "resources": ["pods"], "verbs": ["get"], "resourceNames": names},
            {"apiGroups": [""], "resources": ["pods/exec"], "verbs": ["create"], "resourceNames": names},
        ],
    )


def serve(writer: RecordingWriter, *objects: Obj) -> RecordingWriter:
    for obj in objects:
        plural = "roles" if obj["kind"] == "Role" else "rolebindings"
        writer.served[(plural, obj["metadata"]["name"])] = obj
    return writer


class ExistingRBAC(RecordingWriter):
    """The API server already has the Roles and RoleBindings in `served`: a create of one answers 409."""

    async def create(self, res: Resource, body: Obj, namespace: str | None = None) -> Obj:
        if (res.plural, body["metadata"]["name"]) in self.served:
            self._record("create", res, body["metadata"]["name"], body)
            raise errors.AlreadyExists(
                409, "AlreadyExists", f'{res.plural} "{body["metadata"]["name"]}" exists'
            )
        return await super().create(res, body, namespace)


def granting(*workers: str) -> RecordingWriter:
    """An API server that has the job's Role, as the operator wrote it for these workers."""
    return serve(ExistingRBAC(), full_role(*workers))


def running(pi: Obj, *workers: Obj, writer: RecordingWriter | None = None) -> Scene:
    return running_scene(pi, *workers, writer=writer, settings=ALLOWED)


# --- the Role names the live workers, on every sync ------------------------------------------------------


async def test_a_terminating_worker_leaves_the_role() -> None:
    pi = exec_job(workers=2, status=running_status(2))
    scene = running(pi, worker(pi, 0), terminating(worker(pi, 1)))

    await scene.sync()

    assert granted(scene)[-1] == ["pi-worker-0"]


async def test_an_evicted_worker_leaves_the_role() -> None:
    """Failed, not terminating: the pod collector's later delete removes it at once, with no window to
    take the name out first."""
    pi = exec_job(workers=2, status=running_status(2))
    scene = running(pi, worker(pi, 0), worker(pi, 1, "Failed", reason="Evicted"))

    await scene.sync()

    assert granted(scene)[-1] == ["pi-worker-0"]


async def test_a_suspended_jobs_role_is_emptied_before_its_workers_are_deleted() -> None:
    pi = exec_job(workers=2, status=running_status(2), suspend=True)
    scene = running(pi, worker(pi, 0), worker(pi, 1), writer=granting("pi-worker-0", "pi-worker-1"))

    await scene.sync()

    assert granted(scene)[-1] == []
    assert last_role_write(scene) < position(scene, "delete", "pods")


async def test_a_finished_jobs_role_is_emptied_before_clean_up_deletes_its_workers() -> None:
    pi = exec_job(workers=2, status=finished_status("Succeeded", "MPIJobSucceeded"))
    scene = running(pi, worker(pi, 0), worker(pi, 1), writer=granting("pi-worker-0", "pi-worker-1"))

    await scene.sync()

    assert granted(scene)[-1] == []
    assert last_role_write(scene) < position(scene, "delete", "pods")


async def test_scale_down_takes_the_name_out_of_the_role_before_the_pod_is_deleted() -> None:
    pi = exec_job(workers=1, status=running_status(2))
    scene = running(
        pi,
        worker(pi, 0),
        worker(pi, 1),
        writer=serve(ExistingRBAC(), full_role("pi-worker-0", "pi-worker-1")),
    )

    await scene.sync()

    assert granted(scene)[0] == ["pi-worker-0"]
    assert position(scene, "update", "roles") < position(scene, "delete", "pods", "pi-worker-1")


async def test_a_whole_job_restart_empties_the_role_before_the_attempts_pods_go() -> None:
    pi = exec_job(workers=2, status=running_status(2))
    pi["metadata"]["annotations"][restarts.RESTART_POLICY] = "OnWorkerFailure"
    failed = failed_worker(pi, 1)
    scene = running(pi, worker(pi, 0), failed, writer=granting("pi-worker-0", "pi-worker-1"))

    await scene.sync()

    assert granted(scene)[-1] == []
    assert last_role_write(scene) < position(scene, "delete", "pods")


async def test_workers_of_an_earlier_attempt_are_never_named() -> None:
    pi = exec_job(workers=2, status={**running_status(2), "restarts": 1})
    pi["metadata"]["annotations"][restarts.RESTART_POLICY] = "OnWorkerFailure"
    current = worker(pi, 0)
    current["metadata"]["labels"][restarts.ATTEMPT_LABEL] = "1"
    earlier = terminating(worker(pi, 1))
    earlier["metadata"]["labels"][restarts.ATTEMPT_LABEL] = "0"
    scene = running(pi, current, earlier)

    await scene.sync()

    assert granted(scene)[-1] == ["pi-worker-0"]


# --- the finalizer -----------------------------------------------------------------------------------


async def test_an_exec_agent_job_gets_the_finalizer_before_any_grant() -> None:
    pi = exec_job(workers=2)
    del pi["metadata"]["finalizers"]
    scene = Scene(pi, settings=ALLOWED)

    await scene.sync()

    first = position(scene, "update", "mpijobs", "pi")
    assert scene.writer.log[first].body["metadata"]["finalizers"] == [FINALIZER]  # type: ignore[index]
    assert not [c for c in scene.writer.calls[:first] if c[1] in ("roles", "rolebindings", "pods")]


async def test_a_deleted_job_has_its_role_emptied_and_binding_deleted_then_loses_its_finalizer() -> None:
    pi = exec_job(workers=2, status=running_status(2))
    pi["metadata"]["deletionTimestamp"] = EARLIER
    pi["metadata"]["finalizers"] = ["orphan", FINALIZER]
    binding = ours("RoleBinding", roleRef={"kind": "Role", "name": "pi-launcher"}, subjects=[])
    writer = serve(ExistingRBAC(), full_role("pi-worker-0", "pi-worker-1"), binding)
    scene = Scene(pi, worker(pi, 0), worker(pi, 1), writer=writer, settings=ALLOWED)

    await scene.sync()

    assert granted(scene) == [[]]
    assert position(scene, "update", "roles") < position(scene, "update", "mpijobs")
    assert position(scene, "delete", "rolebindings") < position(scene, "update", "mpijobs")
    body = scene.writer.body("update", "mpijobs", "pi")
    assert body["metadata"]["finalizers"] == ["orphan"]


async def test_a_deleted_job_whose_role_and_binding_are_gone_loses_its_finalizer() -> None:
    pi = exec_job(workers=2)
    pi["metadata"]["deletionTimestamp"] = EARLIER
    scene = Scene(pi, settings=ALLOWED)

    await scene.sync()

    assert scene.writer.body("update", "mpijobs", "pi")["metadata"].get("finalizers") in (None, [])


async def test_removing_the_annotation_empties_the_role_deletes_the_binding_and_the_finalizer() -> None:
    pi = exec_job(workers=2, status=running_status(2))
    del pi["metadata"]["annotations"]
    binding = ours("RoleBinding", roleRef={"kind": "Role", "name": "pi-launcher"}, subjects=[])
    writer = serve(ExistingRBAC(), full_role("pi-worker-0", "pi-worker-1"), binding)
    scene = running(pi, worker(pi, 0), worker(pi, 1), writer=writer)

    await scene.sync()

    assert granted(scene) == [[]]
    assert ("delete", "rolebindings", "pi-launcher") in scene.writer.calls
    assert scene.writer.body("update", "mpijobs", "pi")["metadata"].get("finalizers") in (None, [])


async def test_without_the_flag_an_exec_agent_jobs_grants_are_revoked() -> None:
    pi = exec_job(workers=2, status=running_status(2))
    binding = ours("RoleBinding", roleRef={"kind": "Role", "name": "pi-launcher"}, subjects=[])
    writer = serve(ExistingRBAC(), full_role("pi-worker-0", "pi-worker-1"), binding)
    the_launcher = launcher(pi)
    scene = Scene(pi, worker(pi, 0), worker(pi, 1), the_launcher, writer=writer)

    await scene.sync()

    assert granted(scene) == [[]]
    assert ("delete", "rolebindings", "pi-launcher") in scene.writer.calls


# --- a Role or binding the operator did not make --------------------------------------------------------


async def test_a_pre_created_role_naming_the_job_as_controller_is_refused_not_filled() -> None:
    pi = exec_job(workers=2)
    planted = ours("Role", rules=[])
    del planted["metadata"]["labels"][GRANT_LABEL]
    scene = Scene(pi, writer=serve(ExistingRBAC(), planted), settings=ALLOWED)

    await scene.sync()
    await scene.sync()

    assert not [c for c in scene.writer.calls if c[0] == "update" and c[1] == "roles"]
    assert ("create", "jobs", "pi-launcher") not in scene.writer.calls
    condition = next(c for c in scene.written_status()["conditions"] if c["type"] == "ChildRejected")
    assert "Role pi-launcher" in condition["message"]
    refusals = [e for e in scene.recorder.events if "pi-launcher" in e[2] and e[0] == "Warning"]
    assert len(refusals) == 1, scene.recorder.events


async def test_a_pre_created_binding_is_refused() -> None:
    pi = exec_job(workers=2)
    planted = ours("RoleBinding", roleRef={"kind": "Role", "name": "pi-launcher"}, subjects=[])
    del planted["metadata"]["labels"][GRANT_LABEL]
    scene = Scene(pi, writer=serve(ExistingRBAC(), planted), settings=ALLOWED)

    await scene.sync()

    assert not [c for c in scene.writer.calls if c[0] == "update" and c[1] == "rolebindings"]
    assert ("create", "jobs", "pi-launcher") not in scene.writer.calls
    condition = next(c for c in scene.written_status()["conditions"] if c["type"] == "ChildRejected")
    assert "RoleBinding pi-launcher" in condition["message"]


async def test_the_worker_roll_takes_the_names_out_of_the_role_before_it_deletes_the_workers() -> None:
    before = exec_job(workers=2, status=running_status(2))
    before["metadata"]["annotations"]["mpioperator.io/roll-workers-on-template-change"] = "true"
    now = copy.deepcopy(before)
    now["spec"]["mpiReplicaSpecs"]["Worker"]["template"]["spec"]["containers"][0]["image"] = "fixed:v2"
    workers = [worker(before, 0), worker(before, 1)]
    writer = granting("pi-worker-0", "pi-worker-1")
    # The launcher pod has not started: the roll remakes the workers.
    children = job_children(before, *workers, the_launcher=launcher(before), launcher_phase="Pending")
    scene = Scene(now, *children, writer=writer, settings=ALLOWED)

    await scene.sync()

    assert ("delete", "pods", "pi-worker-0") in scene.writer.calls
    assert granted(scene)[-1] == []
    assert last_role_write(scene) < position(scene, "delete", "pods")


class NoRBACRights(RecordingWriter):
    """An operator whose exec-agent rights were taken away: every Role and RoleBinding request is 403."""

    async def get(self, res: Resource, name: str, namespace: str | None = None) -> Obj:
        if res.plural in ("roles", "rolebindings"):
            self._record("get", res, name, None)
            raise errors.Forbidden(403, "Forbidden", f"cannot get {res.plural}")
        return await super().get(res, name, namespace)


async def test_an_operator_that_may_not_revoke_still_removes_the_finalizer_of_a_deleted_job() -> None:
    pi = exec_job(workers=2)
    pi["metadata"]["deletionTimestamp"] = EARLIER
    scene = Scene(pi, writer=NoRBACRights())

    await scene.sync()

    assert ("get", "roles", "pi-launcher") in scene.writer.calls
    assert scene.writer.body("update", "mpijobs", "pi")["metadata"].get("finalizers") in (None, [])
