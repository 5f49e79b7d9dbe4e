"""An exec-agent job that asks to wait for its hosts (`mpioperator.io/wait-for-ssh-port` with
`mpioperator.io/launch-agent: exec`): its launcher Job is made once every worker pod is Running, in memory."""

from __future__ import annotations

from mpioperator.api.objects import Obj
from mpioperator.controller.sync import SyncSettings
from mpioperator.podgroup.maths import launcher_in_gang, min_member
from test.unit.controller.sync_fixtures import Scene, job, shared_children, worker

ALLOWED = SyncSettings(exec_agent_image="mpioperator/kubectl-delivery:latest")
EXEC_WAITING = {"mpioperator.io/launch-agent": "exec", "mpioperator.io/wait-for-ssh-port": "22"}


def exec_waiting_job(workers: int = 2, *, suspend: bool = False) -> Obj:
    made = job(workers=workers, suspend=True) if suspend else job(workers=workers)
    made["metadata"]["annotations"] = dict(EXEC_WAITING)
    return made


def launcher_created(scene: Scene) -> bool:
    return ("create", "jobs", "pi-launcher") in scene.writer.calls


async def test_the_first_sync_makes_the_workers_but_no_launcher() -> None:
    scene = Scene(exec_waiting_job(workers=2), settings=ALLOWED)

    await scene.sync()

    assert ("create", "pods", "pi-worker-1") in scene.writer.calls
    assert not launcher_created(scene)


async def test_no_launcher_while_a_worker_is_still_pending() -> None:
    pi = exec_waiting_job(workers=2)
    workers = [worker(pi, 0), worker(pi, 1, "Pending")]
    scene = Scene(pi, *shared_children(pi, workers[:1]), *workers, settings=ALLOWED)

    await scene.sync()

    assert not launcher_created(scene)


async def test_once_every_worker_runs_the_launcher_is_made_without_the_port_waiter() -> None:
    pi = exec_waiting_job(workers=2)
    # Running but not Ready: the exec agent needs a running container, not the user's readiness.
    workers = [worker(pi, i, ready=False) for i in range(2)]
    scene = Scene(pi, *shared_children(pi, workers), *workers, settings=ALLOWED)

    await scene.sync()

    assert launcher_created(scene)
    spec = scene.writer.body("create", "jobs", "pi-launcher")["spec"]["template"]["spec"]
    assert spec["serviceAccountName"] == "pi-launcher"
    inits = [c["name"] for c in spec.get("initContainers") or ()]
    assert "mpioperator-wait-for-hosts" not in inits, "no sshd listens on the workers: nothing to connect to"


async def test_a_suspended_job_gets_no_launcher_even_with_running_workers() -> None:
    pi = exec_waiting_job(workers=2, suspend=True)
    workers = [worker(pi, i) for i in range(2)]
    scene = Scene(pi, *shared_children(pi, workers), *workers, settings=ALLOWED)

    await scene.sync()

    assert not launcher_created(scene)


async def test_an_ssh_job_that_waits_still_makes_its_launcher_with_the_workers() -> None:
    pi = job(workers=2)
    pi["metadata"]["annotations"] = {"mpioperator.io/wait-for-ssh-port": "2222"}
    scene = Scene(pi, settings=ALLOWED)

    await scene.sync()

    assert launcher_created(scene)
    spec = scene.writer.body("create", "jobs", "pi-launcher")["spec"]["template"]["spec"]
    assert [c["name"] for c in spec["initContainers"]] == ["mpioperator-wait-for-hosts"]


def test_the_gang_counts_the_launcher_only_once_its_job_exists() -> None:
    pi = exec_waiting_job(workers=2)

    assert min_member(pi, launcher_in_gang(pi, launcher_exists=False)) == 2
    assert min_member(pi, launcher_in_gang(pi, launcher_exists=True)) == 3
    plain = job(workers=2)
    plain["metadata"]["annotations"] = {"mpioperator.io/launch-agent": "exec"}
    assert min_member(plain, launcher_in_gang(plain, launcher_exists=False)) == 3
