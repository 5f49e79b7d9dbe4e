"""Issue 18's annotations on a real API server: the generated mpirun line, the user's own SSH Secret, debug
mode and the worker roll, each with its bad inputs. The harness is the single-sync one of
test_upstream_sync_scenarios.py: the test plays kubelet and the Job controller and calls the sync itself."""

from __future__ import annotations

import base64
from collections.abc import AsyncIterator
from typing import Any

import pytest
import pytest_asyncio

from mpioperator.api.objects import Obj
from mpioperator.controller.builders.secret import new_key_pair
from mpioperator.controller.events import truncate_message
from mpioperator.kube.resources import MPIJOBS
from mpioperator.testing.cluster import LocalCluster
from mpioperator.testing.mpijobs import mpijob
from test.integration.controller.test_upstream_sync_scenarios import Scene, informers_only

P = "mpioperator.io/"


@pytest_asyncio.fixture
async def scene(mpijob_crd: LocalCluster, make_namespace: Any) -> AsyncIterator[Scene]:
    async with informers_only(mpijob_crd, make_namespace(mpijob_crd)) as h:
        yield Scene(h)


def job_without_command(
    name: str, annotations: dict[str, str], *, implementation: str = "OpenMPI", **kwargs: Any
) -> Obj:
    """The pi job with a launcher that has no command or args of its own."""
    body = mpijob(name, implementation=implementation, **kwargs)
    container = body["spec"]["mpiReplicaSpecs"]["Launcher"]["template"]["spec"]["containers"][0]
    del container["command"], container["args"]
    body["metadata"]["annotations"] = annotations
    return body


def launcher_container(scene: Scene, job: str) -> Obj:
    launcher = scene.launcher_job(job)
    assert launcher is not None, f"no launcher Job for {job}"
    container: Obj = launcher["spec"]["template"]["spec"]["containers"][0]
    return container


def of_reason(scene: Scene, job: str, reason: str) -> list[tuple[str, str, str]]:
    return [e for e in scene.recorded(job) if e[1] == reason]


# --- the generated launcher command ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("implementation", "annotations", "expected"),
    [
        (
            "OpenMPI",
            {
                f"{P}launcher-program": "/home/mpiuser/pi --digits 9",
                f"{P}mpirun-extra-args": "--bind-to none",
                f"{P}mca-params": "btl=self,tcp\nbtl_tcp_if_include = eth0",
                f"{P}mpi-home": "/usr/",
            },
            "/usr/bin/mpirun --hostfile /etc/mpi/hostfile -np 6 --mca btl self,tcp "
            "--mca btl_tcp_if_include eth0 --bind-to none /home/mpiuser/pi --digits 9",
        ),
        (
            "Intel",
            {f"{P}launcher-program": "/home/mpiuser/pi", f"{P}mpi-home": "/opt/intel/mpi"},
            "/opt/intel/mpi/bin/mpirun -f /etc/mpi/hostfile -n 6 -ppn 2 /home/mpiuser/pi",
        ),
        (
            "MPICH",
            {f"{P}launcher-program": "/home/mpiuser/pi", f"{P}mpirun-extra-args": "-v"},
            "mpirun -f /etc/mpi/hostfile -n 6 -ppn 2 -v /home/mpiuser/pi",
        ),
    ],
)
async def test_generated_mpirun_line_fits_the_implementation_and_shows_in_the_launcher_job_and_an_event(
    scene: Scene, implementation: str, annotations: dict[str, str], expected: str
) -> None:
    scene.submit(
        job_without_command(
            "gen", annotations, implementation=implementation, workers=3, spec={"slotsPerWorker": 2}
        )
    )

    await scene.sync("gen")

    container = launcher_container(scene, "gen")
    assert " ".join(container["args"]) == expected
    assert "command" not in container, "the image's entrypoint runs the line"
    assert of_reason(scene, "gen", "LauncherCommandGenerated") == [
        ("Normal", "LauncherCommandGenerated", f"Launcher gen-launcher runs: {expected}")
    ]
    await scene.assert_converged("gen")


async def test_generated_line_counts_the_launcher_that_runs_as_a_worker(scene: Scene) -> None:
    scene.submit(
        job_without_command(
            "aswork",
            {f"{P}launcher-program": "/home/mpiuser/pi"},
            workers=2,
            spec={"runLauncherAsWorker": True},
        )
    )
    await scene.sync("aswork")
    assert launcher_container(scene, "aswork")["args"][:5] == [
        "mpirun",
        "--hostfile",
        "/etc/mpi/hostfile",
        "-np",
        "3",
    ]


@pytest.mark.parametrize(
    ("annotations", "implementation", "problem"),
    [
        (
            {f"{P}launcher-program": "/home/mpiuser/pi", f"{P}mca-params": "btl tcp=self"},
            "OpenMPI",
            'metadata.annotations[mpioperator.io/mca-params]: Invalid value: "btl tcp=self": must be key=value, '
            "the key made of letters, digits and underscores",
        ),
        (
            {f"{P}launcher-program": "pi --digits 9"},
            "OpenMPI",
            'metadata.annotations[mpioperator.io/launcher-program]: Invalid value: "pi --digits 9": '
            "must start with the program's absolute path, or its path relative to the launcher "
            "container's workingDir (./program) when that is set",
        ),
        (
            {f"{P}launcher-program": "/home/mpiuser/pi", f"{P}mca-params": "btl=tcp"},
            "MPICH",
            'metadata.annotations[mpioperator.io/mca-params]: Invalid value: "btl=tcp": '
            "MCA parameters are Open MPI's; spec.mpiImplementation is MPICH",
        ),
        (
            {f"{P}launcher-program": "/home/mpiuser/pi", f"{P}mpi-home": "opt/mpich"},
            "MPICH",
            'metadata.annotations[mpioperator.io/mpi-home]: Invalid value: "opt/mpich": must be an absolute path',
        ),
        (
            {f"{P}mpirun-extra-args": "--bind-to none"},
            "OpenMPI",
            'metadata.annotations[mpioperator.io/mpirun-extra-args]: Invalid value: "--bind-to none": '
            "needs mpioperator.io/launcher-program",
        ),
        (
            {f"{P}launcher-program": "/home/mpiuser/pi 'unclosed"},
            "OpenMPI",
            "metadata.annotations[mpioperator.io/launcher-program]: Invalid value: "
            '"/home/mpiuser/pi \'unclosed": unbalanced quotes',
        ),
        (
            {f"{P}debug-mode": "yes"},
            "OpenMPI",
            'metadata.annotations[mpioperator.io/debug-mode]: Unsupported value: "yes": '
            'supported values: "false", "true"',
        ),
        (
            {f"{P}ssh-secret": "My_Keys"},
            "OpenMPI",
            'metadata.annotations[mpioperator.io/ssh-secret]: Invalid value: "My_Keys": '
            "must be the name of a Secret",
        ),
        (
            {f"{P}ssh-secret": "9" * 254},
            "OpenMPI",
            f'metadata.annotations[mpioperator.io/ssh-secret]: Invalid value: "{"9" * 254}": '
            "must be the name of a Secret",
        ),
        (
            {f"{P}launcher-program": "/home/mpiuser/pi", f"{P}mpirun-extra-args": "-x A " * 4000},
            "OpenMPI",
            "metadata.annotations[mpioperator.io/mpirun-extra-args]: Too long: may not be more than 16384 bytes",
        ),
        (
            {f"{P}worker-startup-deadline-seconds": "²"},
            "OpenMPI",
            'metadata.annotations[mpioperator.io/worker-startup-deadline-seconds]: Invalid value: "²": '
            "must be a whole number of seconds, at most 9223372036854775807",
        ),
        (
            {f"{P}worker-startup-deadline-seconds": "9" * 4000},
            "OpenMPI",
            "metadata.annotations[mpioperator.io/worker-startup-deadline-seconds]: Invalid value: "
            f'"{"9" * 4000}": must be a whole number of seconds, at most 9223372036854775807',
        ),
    ],
)
async def test_bad_annotation_gives_the_invalid_condition_one_warning_and_no_children(
    scene: Scene, annotations: dict[str, str], implementation: str, problem: str
) -> None:
    scene.submit(job_without_command("bad", annotations, implementation=implementation, workers=1))

    writes = await scene.sync("bad")

    message = f"Found validation errors: {problem}"
    assert writes == [("update_status", "mpijobs", "bad")]
    assert scene.conditions("bad") == [("Invalid", "True", "ValidationError", message)]
    assert scene.recorded("bad") == [("Warning", "ValidationError", truncate_message(message))]
    assert [scene.names(kind) for kind in ("services", "configmaps", "secrets", "jobs", "pods")] == [[]] * 5
    await scene.assert_converged("bad")


async def test_program_annotation_beside_the_launchers_own_command_is_invalid(scene: Scene) -> None:
    body = mpijob("both", workers=1, annotations={f"{P}launcher-program": "/home/mpiuser/pi"})
    scene.submit(body)

    await scene.sync("both")

    (condition,) = scene.conditions("both")
    assert condition[:3] == ("Invalid", "True", "ValidationError")
    assert "the launcher container has its own command or args; set one or the other" in condition[3]
    assert scene.names("jobs") == []


# --- the user's own SSH Secret --------------------------------------------------------------------


def ssh_secret(name: str, *, keys: tuple[str, ...] = ("ssh-privatekey", "ssh-publickey")) -> Obj:
    private, public = new_key_pair()
    values = {"ssh-privatekey": private, "ssh-publickey": public}
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": name},
        "type": "Opaque",
        "data": {k: base64.b64encode(values[k]).decode() for k in keys},
    }


async def test_missing_then_incomplete_then_right_user_secret_holds_the_job_until_it_can_be_mounted(
    scene: Scene,
) -> None:
    body = mpijob("own", workers=2, annotations={f"{P}ssh-secret": "site-keys"})
    scene.submit(body)

    assert await scene.sync("own") == [
        ("create", "services", "own"),
        ("create", "configmaps", "own-config"),
        ("update_status", "mpijobs", "own"),
    ]
    missing = f'Secret "site-keys" named by the SSH secret annotation is not in namespace {scene.ns}'
    assert scene.condition("own", "SSHSecretInvalid") is not None
    assert scene.conditions("own")[-1] == ("SSHSecretInvalid", "True", "SSHSecretNotFound", missing)
    assert of_reason(scene, "own", "SSHSecretNotFound") == [("Warning", "SSHSecretNotFound", missing)]
    result = await scene.h.controller.syncer.sync(scene.key("own"))
    assert result.requeue_after == 5.0, "a held job is looked at again: the Secret is not its child"
    await scene.assert_converged("own")

    scene.rest.create(scene.path("secrets"), ssh_secret("site-keys", keys=("ssh-privatekey",)))
    await scene.sync("own")
    no_public = (
        'Secret "site-keys" has no key "ssh-publickey" (it needs "ssh-privatekey" and "ssh-publickey", '
        'or "id_rsa" and "id_rsa.pub")'
    )
    assert scene.conditions("own")[-1] == ("SSHSecretInvalid", "True", "SSHSecretKeyMissing", no_public)
    assert scene.names("pods") == [] and scene.names("jobs") == []

    secret = ssh_secret("site-keys")
    secret["data"]["ssh-publickey"] = base64.b64encode(b"not a key\n").decode()
    current = scene.get("secrets", "site-keys")
    assert current is not None
    scene.rest.request("PUT", scene.path("secrets", "site-keys"), {**secret, "metadata": current["metadata"]})
    await scene.sync("own")
    malformed = 'key "ssh-publickey" of Secret "site-keys" is not an OpenSSH public key line'
    assert scene.conditions("own")[-1] == ("SSHSecretInvalid", "True", "SSHSecretKeyMalformed", malformed)

    fixed = ssh_secret("site-keys")
    current = scene.get("secrets", "site-keys")
    assert current is not None
    scene.rest.request("PUT", scene.path("secrets", "site-keys"), {**fixed, "metadata": current["metadata"]})
    before = scene.get("secrets", "site-keys")
    assert before is not None
    writes = await scene.sync("own")

    assert ("create", "jobs", "own-launcher") in writes
    assert sorted(n for verb, kind, n in writes if (verb, kind) == ("create", "pods")) == [
        "own-worker-0",
        "own-worker-1",
    ]
    assert [c[0] for c in scene.conditions("own")] == ["Created"]
    assert scene.names("secrets") == ["site-keys"], "no generated <job>-ssh Secret"
    launcher = scene.launcher_job("own")
    assert launcher is not None
    for spec in [launcher["spec"]["template"]["spec"], *(p["spec"] for p in scene.worker_pods("own"))]:
        (volume,) = [v for v in spec["volumes"] if v["name"] == "ssh-auth"]
        assert volume["secret"]["secretName"] == "site-keys"
        assert volume["secret"]["defaultMode"] == 0o600
        assert [i["key"] for i in volume["secret"]["items"]] == [
            "ssh-privatekey",
            "ssh-publickey",
            "ssh-publickey",
        ]
    after = scene.get("secrets", "site-keys")
    assert after is not None
    assert after["metadata"]["resourceVersion"] == before["metadata"]["resourceVersion"]
    assert "ownerReferences" not in after["metadata"], "the garbage collector must never take the user's keys"
    await scene.assert_converged("own")


async def test_user_secret_is_left_alone_when_the_job_finishes_and_is_cleaned_up(scene: Scene) -> None:
    scene.rest.create(scene.path("secrets"), ssh_secret("kept-keys"))
    body = mpijob(
        "done", workers=1, run_policy={"cleanPodPolicy": "All"}, annotations={f"{P}ssh-secret": "kept-keys"}
    )
    scene.submit(body)
    await scene.sync("done")
    before = scene.get("secrets", "kept-keys")
    assert before is not None
    scene.set_launcher_job("done", "Complete")

    await scene.sync("done")
    await scene.sync("done")

    assert scene.condition("done", "Succeeded") is not None
    after = scene.get("secrets", "kept-keys")
    assert after is not None and after["metadata"]["resourceVersion"] == before["metadata"]["resourceVersion"]
    assert not any(kind == "secrets" for _, kind, _ in scene.h.writer.writes)


# --- debug mode -----------------------------------------------------------------------------------


async def test_debug_mode_launcher_waits_workers_run_sshd_and_the_event_gives_the_exec_line(
    scene: Scene,
) -> None:
    body = job_without_command(
        "dbg", {f"{P}debug-mode": "true", f"{P}launcher-program": "/home/mpiuser/pi"}, workers=2
    )
    scene.submit(body)

    await scene.sync("dbg")

    container = launcher_container(scene, "dbg")
    assert container["command"] == ["sleep", "infinity"] and "args" not in container
    launcher = scene.launcher_job("dbg")
    assert launcher is not None and launcher["metadata"]["annotations"] == {f"{P}debug-mode": "true"}
    assert [p["spec"]["containers"][0]["command"] for p in scene.worker_pods("dbg")] == [
        ["/usr/sbin/sshd", "-De"]
    ] * 2
    line = "mpirun --hostfile /etc/mpi/hostfile -np 2 /home/mpiuser/pi"
    expected = (
        f"MPIJob {scene.ns}/dbg is in debug mode: the launcher runs `sleep infinity` instead of its command. "
        f"Open a shell in it with: kubectl exec -it -n {scene.ns} job/dbg-launcher -c launcher -- sh "
        f"and run: {line}"
    )
    assert scene.conditions("dbg")[-1] == ("DebugMode", "True", "DebugMode", expected)
    assert of_reason(scene, "dbg", "DebugMode") == [("Normal", "DebugMode", expected)]
    assert of_reason(scene, "dbg", "LauncherCommandGenerated") == [
        (
            "Normal",
            "LauncherCommandGenerated",
            f"Launcher dbg-launcher is in debug mode; the job's command is: {line}",
        )
    ]
    scene.set_workers("dbg", "Running", ready=True)
    scene.create_launcher_pod("dbg")
    await scene.sync("dbg")
    assert scene.condition("dbg", "Running") is not None
    assert (scene.condition("dbg", "DebugMode") or {}).get("status") == "True"
    assert scene.status("dbg")["phase"] == "Running", "debug mode is told by its condition, not the phase"
    await scene.assert_converged("dbg")


async def test_debug_command_annotation_chooses_what_the_launcher_waits_with(scene: Scene) -> None:
    body = mpijob(
        "wait", workers=1, annotations={f"{P}debug-mode": "true", f"{P}debug-command": "sh -c 'sleep 3600'"}
    )
    scene.submit(body)
    await scene.sync("wait")
    container = launcher_container(scene, "wait")
    assert container["command"] == ["sh", "-c", "sleep 3600"] and "args" not in container


async def test_removing_the_debug_annotation_replaces_the_launcher_with_one_running_the_jobs_command(
    scene: Scene,
) -> None:
    body = mpijob("flip", workers=2, annotations={f"{P}debug-mode": "true"})
    scene.submit(body)
    await scene.sync("flip")
    scene.set_workers("flip", "Running", ready=True)
    scene.create_launcher_pod("flip")
    await scene.sync("flip")
    workers_before = [p["metadata"]["uid"] for p in scene.worker_pods("flip")]
    old_uid = (scene.launcher_job("flip") or {})["metadata"]["uid"]

    scene.rest.merge_patch(
        scene.path("mpijobs", "flip"), {"metadata": {"annotations": {f"{P}debug-mode": None}}}
    )
    await scene.until_true(
        lambda: not (scene.cached(MPIJOBS, "flip") or {}).get("metadata", {}).get("annotations"),
        "the annotation gone in the cache",
    )
    writes = await scene.sync("flip")

    assert ("delete", "jobs", "flip-launcher") in writes
    assert not any(kind == "pods" for _, kind, _ in writes), "workers stay"
    assert [e[2] for e in of_reason(scene, "flip", "DebugModeEnded")] == [
        "Debug mode ended: launcher Job flip-launcher deleted, to be made again with the job's own command"
    ]
    assert scene.condition("flip", "DebugMode") is None

    writes = await scene.sync("flip")

    assert ("create", "jobs", "flip-launcher") in writes
    launcher = scene.launcher_job("flip")
    assert launcher is not None and launcher["metadata"]["uid"] != old_uid
    container = launcher["spec"]["template"]["spec"]["containers"][0]
    assert container["command"] == ["mpirun"] and container["args"] == ["-n", "2", "/home/mpiuser/pi"]
    assert [p["metadata"]["uid"] for p in scene.worker_pods("flip")] == workers_before


async def test_debug_mode_asked_after_the_launcher_was_made_changes_nothing_and_says_so(scene: Scene) -> None:
    scene.submit(mpijob("late", workers=1))
    await scene.sync("late")
    scene.rest.merge_patch(
        scene.path("mpijobs", "late"), {"metadata": {"annotations": {f"{P}debug-mode": "true"}}}
    )
    await scene.until_true(
        lambda: bool((scene.cached(MPIJOBS, "late") or {}).get("metadata", {}).get("annotations")),
        "the annotation in the cache",
    )

    writes = await scene.sync("late")

    assert writes == [("update_status", "mpijobs", "late")]
    condition = scene.condition("late", "DebugMode")
    assert condition is not None and (condition["status"], condition["reason"]) == (
        "False",
        "LauncherAlreadyStarted",
    )
    assert launcher_container(scene, "late")["command"] == ["mpirun"]


# --- the worker roll ------------------------------------------------------------------------------


def rolling_job(name: str, *, roll: bool = True) -> Obj:
    body = mpijob(name, workers=2, spec={"launcherCreationPolicy": "WaitForWorkersReady"})
    if roll:
        body["metadata"]["annotations"] = {f"{P}roll-workers-on-template-change": "true"}
    return body


def new_worker_image(scene: Scene, job: str) -> None:
    scene.patch_spec(
        job,
        {
            "spec": {
                "mpiReplicaSpecs": {
                    "Worker": {
                        "template": {"spec": {"containers": [{"name": "worker", "image": "fixed:v2"}]}}
                    }
                }
            }
        },
    )


async def _changed_in_cache(scene: Scene, job: str) -> None:
    def seen() -> bool:
        cached = scene.cached(MPIJOBS, job) or {}
        template = cached["spec"]["mpiReplicaSpecs"]["Worker"]["template"]
        return bool(template["spec"]["containers"][0]["image"] == "fixed:v2")

    await scene.until_true(seen, "the new worker template in the cache")


async def test_changed_worker_template_recreates_all_workers_before_the_launcher_exists(scene: Scene) -> None:
    scene.submit(rolling_job("roll"))
    await scene.sync("roll")
    scene.set_workers("roll", "Pending", ready=False)
    new_worker_image(scene, "roll")
    await _changed_in_cache(scene, "roll")

    writes = await scene.sync("roll")

    assert sorted(n for verb, kind, n in writes if (verb, kind) == ("delete", "pods")) == [
        "roll-worker-0",
        "roll-worker-1",
    ]
    assert ("create", "jobs", "roll-launcher") not in writes
    assert of_reason(scene, "roll", "WorkersRolled") == [
        (
            "Normal",
            "WorkersRolled",
            "Worker template changed: re-creating workers roll-worker-0, roll-worker-1",
        )
    ]
    await scene.until_true(lambda: scene.worker_pods("roll") == [], "the old workers gone")

    writes = await scene.sync("roll")

    assert sorted(n for verb, kind, n in writes if (verb, kind) == ("create", "pods")) == [
        "roll-worker-0",
        "roll-worker-1",
    ]
    assert [p["spec"]["containers"][0]["image"] for p in scene.worker_pods("roll")] == ["fixed:v2"] * 2
    await scene.assert_converged("roll")


async def test_worker_template_change_without_the_annotation_leaves_workers_as_upstream_does(
    scene: Scene,
) -> None:
    scene.submit(rolling_job("keep", roll=False))
    await scene.sync("keep")
    new_worker_image(scene, "keep")
    await _changed_in_cache(scene, "keep")

    writes = await scene.sync("keep")

    assert not any(kind == "pods" for _, kind, _ in writes)
    assert [p["spec"]["containers"][0]["image"] for p in scene.worker_pods("keep")] == [
        "mpioperator/mpi-pi:openmpi"
    ] * 2


async def test_worker_template_change_after_the_launcher_started_rolls_nothing(scene: Scene) -> None:
    scene.submit(rolling_job("started"))
    await scene.sync("started")
    scene.set_workers("started", "Running", ready=True)
    await scene.sync("started")
    scene.create_launcher_pod("started", phase="Running")
    new_worker_image(scene, "started")
    await _changed_in_cache(scene, "started")

    writes = await scene.sync("started")

    assert not any(kind == "pods" for _, kind, _ in writes)
    assert of_reason(scene, "started", "WorkersRolled") == []
