"""The launcher's wait-for-hosts init container (`mpioperator.io/wait-for-ssh-port`): what the builder adds
to the launcher's pod template, and what the sync does when the waiter gives up."""

from __future__ import annotations

import copy

import pytest

from mpioperator.api.objects import Obj
from mpioperator.api.validation import validate_mpijob
from mpioperator.controller.decorators.compose import launcher_pod_template
from mpioperator.controller.decorators.host_waiter import HostWaiter
from mpioperator.controller.pod_cache import slim_pod
from mpioperator.controller.sync import SyncSettings
from mpioperator.podgroup.resources import effective_pod_requests
from test.unit.controller import sync_fixtures as fx
from test.unit.controller.jobs import reference_job

PORT = "mpioperator.io/wait-for-ssh-port"
DEADLINE = "mpioperator.io/worker-startup-deadline-seconds"
WAITER = "mpioperator-wait-for-hosts"
GAVE_UP = "1 of 2 hosts not reachable within 30s: pi-worker-1.pi.default.svc (port 2222: Connection refused)"


def _job(annotations: dict[str, str] | None = None, **launcher_container: object) -> Obj:
    job = reference_job(2)
    if annotations:
        job["metadata"]["annotations"] = annotations
    job["spec"]["mpiReplicaSpecs"]["Launcher"]["template"]["spec"]["containers"][0].update(launcher_container)
    return job


def _init_containers(job: Obj, waiter: HostWaiter | None = None) -> list[Obj]:
    template, _ = launcher_pod_template(job, waiter=waiter)
    found: list[Obj] = template["spec"].get("initContainers") or []
    return found


def test_without_the_annotation_the_launcher_pod_is_as_before() -> None:
    template, _ = launcher_pod_template(_job())

    assert "initContainers" not in template["spec"]


def test_with_the_annotation_the_waiter_runs_last_from_the_operators_image_with_the_jobs_deadline() -> None:
    theirs = {"name": "fetch-data", "image": "busybox", "command": ["true"]}
    job = _job({PORT: "2222", DEADLINE: "90"})
    job["spec"]["mpiReplicaSpecs"]["Launcher"]["template"]["spec"]["initContainers"] = [theirs]

    first, waiter = _init_containers(job, HostWaiter("registry.example/mpi-operator:v1", 600))

    assert first == theirs
    assert waiter["name"] == WAITER
    assert waiter["image"] == "registry.example/mpi-operator:v1"
    assert waiter["command"] == [
        "mpi-operator",
        "wait-for-hosts",
        "--hostfile=/etc/mpi/hostfile",
        "--port=2222",
        "--deadline-seconds=90",
    ]
    assert waiter["volumeMounts"] == [{"name": "mpi-job-config", "mountPath": "/etc/mpi", "readOnly": True}]
    context = waiter["securityContext"]
    assert context["runAsNonRoot"] is True and context["runAsUser"] == 65532
    assert context["allowPrivilegeEscalation"] is False and context["capabilities"] == {"drop": ["ALL"]}
    assert context["readOnlyRootFilesystem"] is True
    assert context["seccompProfile"] == {"type": "RuntimeDefault"}


def test_the_operators_deadline_bounds_the_wait_of_a_job_without_its_own() -> None:
    (waiter,) = _init_containers(_job({PORT: "22"}), HostWaiter("img", 600))

    assert "--deadline-seconds=600" in waiter["command"]
    assert "--port=22" in waiter["command"]


@pytest.mark.parametrize(
    "resources",
    [
        {},
        {"requests": {"cpu": "1", "memory": "1Gi"}, "limits": {"cpu": "1", "memory": "1Gi"}},
        {"requests": {"cpu": "250m"}},
        {"limits": {"memory": "2Gi", "nvidia.com/gpu": "1"}},
        {"requests": {"cpu": "4", "memory": "8Gi", "nvidia.com/gpu": "2"}},
    ],
)
def test_the_pod_reserves_what_it_did_without_the_waiter(resources: Obj) -> None:
    """The scheduler reserves the larger of the init containers and the containers, and a gang's
    minResources count it so (effective_pod_requests): both stay as without the waiter. QoS stays too:
    the waiter has the launcher's CPU and memory, requests and limits, and no GPU."""
    plain, _ = launcher_pod_template(_job(resources=copy.deepcopy(resources)))
    waiting, _ = launcher_pod_template(_job({PORT: "2222"}, resources=copy.deepcopy(resources)))

    assert effective_pod_requests(waiting["spec"]) == effective_pod_requests(plain["spec"])
    waiter = waiting["spec"]["initContainers"][-1]
    for kind in ("requests", "limits"):
        own = {k: v for k, v in (resources.get(kind) or {}).items() if k in ("cpu", "memory")}
        assert (waiter.get("resources") or {}).get(kind) == (own or None)


def test_the_launcher_as_worker_stays_index_0_and_the_waiter_is_added_once() -> None:
    job = _job({PORT: "2222"})
    job["spec"]["runLauncherAsWorker"] = True

    template, _ = launcher_pod_template(job)

    assert [c["name"] for c in template["spec"]["initContainers"]] == [WAITER]


@pytest.mark.parametrize("value", ["0", "65536", "ssh", "²", "9" * 40, "", "-22"])
def test_a_port_that_is_not_one_makes_the_job_invalid(value: str) -> None:
    problems = validate_mpijob(_job({PORT: value}))

    assert [p.field for p in problems] == [f"metadata.annotations[{PORT}]"]
    assert validate_mpijob(_job({PORT: "65535"})) == []


# --- the sync ---


def _waiting_scene(
    annotations: dict[str, str], *, image: str = "mpioperator/mpi-operator-py:latest"
) -> fx.Scene:
    pi = fx.job(2)
    pi["metadata"]["annotations"] = annotations
    workers = [fx.worker(pi, 0), fx.worker(pi, 1)]
    return fx.Scene(
        pi,
        *fx.shared_children(pi, workers),
        *workers,
        settings=SyncSettings(host_waiter_image=image, worker_startup_deadline_seconds=45),
    )


async def test_a_new_launcher_job_carries_the_waiter_from_the_configured_image() -> None:
    scene = _waiting_scene({PORT: "2222"}, image="registry.example/mpi-operator:v1")

    await scene.sync()

    body = scene.writer.body("create", "jobs", "pi-launcher")
    (waiter,) = body["spec"]["template"]["spec"]["initContainers"]
    assert waiter["image"] == "registry.example/mpi-operator:v1"
    assert "--deadline-seconds=45" in waiter["command"]


def _gave_up_pod(pi: Obj, launcher_job: Obj, *, in_last_state: bool = False, **ended: object) -> Obj:
    """A launcher pod whose waiter gave up, as the operator's pod cache keeps it (slim: no names)."""
    pod = fx.launcher_pod(pi, launcher_job, phase="Pending")
    end = {"terminated": {"exitCode": 3, "reason": "Error", "message": f"wait-for-hosts: {GAVE_UP}", **ended}}
    waiting = {"waiting": {"reason": "CrashLoopBackOff", "message": "back-off 10s"}}
    status: Obj = {"name": WAITER, "restartCount": 1 if in_last_state else 0, "image": "operator"}
    status |= {"state": waiting, "lastState": end} if in_last_state else {"state": end}
    pod["status"]["initContainerStatuses"] = [status]
    return slim_pod(pod)


@pytest.mark.parametrize("in_last_state", [False, True])
async def test_a_waiter_that_gave_up_fails_the_job_once_naming_the_hosts_and_stops_the_launcher(
    in_last_state: bool,
) -> None:
    pi = fx.job(2, cleanPodPolicy="None")
    pi["metadata"]["annotations"] = {PORT: "2222"}
    pi["status"] = {
        "conditions": [
            fx.true_condition("Created", "MPIJobCreated", "MPIJob default/pi is created.", fx.EARLIER)
        ],
        "startTime": fx.EARLIER,
    }
    workers = [fx.worker(pi, 0), fx.worker(pi, 1)]
    the_launcher = fx.launcher(pi)
    scene = fx.Scene(
        pi,
        *fx.shared_children(pi, workers),
        *workers,
        the_launcher,
        _gave_up_pod(pi, the_launcher, in_last_state=in_last_state),
    )

    await scene.sync()

    failed = [c for c in scene.written_status()["conditions"] if c["type"] == "Failed"]
    assert len(failed) == 1 and failed[0]["reason"] == "WorkerStartupDeadlineExceeded"
    # Said once: the launcher's last words (the waiter's termination message) are not repeated.
    assert failed[0]["message"] == f"launcher pi-launcher-x1 gave up waiting for its hosts: {GAVE_UP}"
    warnings = [e for e in scene.recorder.events if e[1] == "WorkerStartupDeadlineExceeded"]
    assert [e[0] for e in warnings] == ["Warning"]

    # The next sync sees a finished job: its launcher Job is suspended (the waiter would only wait again),
    # although cleanPodPolicy None leaves other finished jobs' launchers alone.
    scene.job["status"] = scene.written_status()
    scene.writer.log.clear()
    await scene.sync()
    assert ("update", "jobs", "pi-launcher") in scene.writer.calls
    assert scene.writer.body("update", "jobs", "pi-launcher")["spec"]["suspend"] is True


@pytest.mark.parametrize(
    "ended",
    [
        {"exitCode": 1},  # the waiter's bad usage, or another init container's failure
        {"message": "3 of 4 hosts not reachable within 30s"},  # a user's init container, exit code 3
    ],
)
async def test_an_init_container_that_ended_otherwise_fails_nothing(ended: Obj) -> None:
    pi = fx.job(2)
    pi["metadata"]["annotations"] = {PORT: "2222"}
    workers = [fx.worker(pi, 0), fx.worker(pi, 1)]
    the_launcher = fx.launcher(pi)
    pod = _gave_up_pod(pi, the_launcher, **ended)
    scene = fx.Scene(pi, *fx.shared_children(pi, workers), *workers, the_launcher, pod)

    await scene.sync()

    assert not [c for c in scene.written_status()["conditions"] if c["type"] == "Failed"]


async def test_a_waiter_still_waiting_fails_nothing() -> None:
    pi = fx.job(2)
    pi["metadata"]["annotations"] = {PORT: "2222"}
    workers = [fx.worker(pi, 0), fx.worker(pi, 1)]
    the_launcher = fx.launcher(pi)
    pod = fx.launcher_pod(pi, the_launcher, phase="Pending")
    pod["status"]["initContainerStatuses"] = [{"name": WAITER, "state": {"running": {}}, "restartCount": 0}]
    scene = fx.Scene(pi, *fx.shared_children(pi, workers), *workers, the_launcher, pod)

    await scene.sync()

    conditions = scene.written_status()["conditions"]
    assert not [c for c in conditions if c["type"] == "Failed"]
