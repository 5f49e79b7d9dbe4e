"""`kubectl mpijob convert` on T9k's MPIJob: each field of T9k's spec mapped as docs/migrating.md says, and
every field that has no equivalent named in a warning."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from mpioperator.api.defaults import set_defaults
from mpioperator.api.validation import validate_mpijob
from mpioperator.cli.convert import ConversionError, convert

REPO = Path(__file__).resolve().parents[3]
FIXTURES = REPO / "test" / "fixtures" / "migrating"
EXAMPLES = REPO / "examples" / "v2beta1" / "migrating"
P = "mpioperator.io/"


def load(path: Path) -> dict[str, Any]:
    loaded: dict[str, Any] = yaml.safe_load(path.read_text())
    return loaded


def t9k_job(**spec: Any) -> dict[str, Any]:
    """A minimal T9k MPIJob in the user manual's shape, with `spec` fields added or replaced."""
    body: dict[str, Any] = {
        "apiVersion": "batch.tensorstack.dev/v1beta1",
        "kind": "MPIJob",
        "metadata": {"name": "walk"},
        "spec": {
            "worker": {
                "replicas": 2,
                "cmd": ["/opt/walk", "20"],
                "template": {"spec": {"containers": [{"name": "mpi-worker", "image": "img"}]}},
            }
        },
    }
    body["spec"].update(spec)
    return body


def replicas(job: dict[str, Any], role: str) -> dict[str, Any]:
    found: dict[str, Any] = job["spec"]["mpiReplicaSpecs"][role]
    return found


def test_t9k_manual_random_walk_job_becomes_a_valid_mpijob_with_the_generated_line() -> None:
    done = convert(load(FIXTURES / "t9k-random-walk.yaml"))

    job = done.job
    assert (job["apiVersion"], job["kind"], job["metadata"]["name"]) == (
        "kubeflow.org/v2beta1",
        "MPIJob",
        "mpi-example",
    )
    assert job["metadata"]["annotations"] == {
        f"{P}launcher-program": "./random_walk 20 40 2",
        f"{P}mpirun-extra-args": "-N 3 --enable-recovery --max-restarts 100 --allow-run-as-root -bind-to none",
        f"{P}mca-params": "btl=^openib\n",
        f"{P}mpi-home": "/usr/local",
    }
    assert job["spec"]["runPolicy"] == {"cleanPodPolicy": "All"}
    assert job["spec"]["slotsPerWorker"] == 3  # -N 3: three ranks on each worker
    assert job["spec"]["launcherCreationPolicy"] == "WaitForWorkersReady"
    worker = replicas(job, "Worker")
    assert worker["replicas"] == 5
    assert worker["template"]["spec"]["containers"][0]["command"] == ["/usr/sbin/sshd", "-De"]
    launcher = replicas(job, "Launcher")
    assert launcher["replicas"] == 1
    [container] = launcher["template"]["spec"]["containers"]
    assert container["name"] == "mpi-launcher" and "command" not in container
    assert container["workingDir"] == "/usr/local/code"  # where ./random_walk is found
    assert validate_mpijob(set_defaults(job)) == []
    assert done.warnings == []


def test_converted_t9k_pi_manifest_is_the_hand_converted_example() -> None:
    done = convert(load(FIXTURES / "t9k-pi.yaml"))

    assert set_defaults(done.job) == set_defaults(load(EXAMPLES / "pi-from-t9k.yaml"))
    assert done.warnings == []


def test_launcher_is_the_worker_container_without_sshd_probes_and_devices() -> None:
    worker = {
        "name": "mpi-worker",
        "image": "img",
        "env": [{"name": "NCCL_DEBUG", "value": "INFO"}],
        "args": ["/usr/sbin/sshd", "-De"],
        "readinessProbe": {"tcpSocket": {"port": 2222}},
        "resources": {"limits": {"cpu": "2", "nvidia.com/gpu": 1}, "requests": {"nvidia.com/gpu": 1}},
    }
    template = {"metadata": {"labels": {"team": "a"}}, "spec": {"containers": [worker]}}

    done = convert(t9k_job(worker={"cmd": ["/opt/walk"], "template": template}))

    launcher = replicas(done.job, "Launcher")["template"]
    assert launcher["metadata"] == {"labels": {"team": "a"}}
    assert launcher["spec"]["containers"] == [
        {
            "name": "mpi-launcher",
            "image": "img",
            "env": [{"name": "NCCL_DEBUG", "value": "INFO"}],
            "resources": {"limits": {"cpu": "2"}},
        }
    ]
    assert replicas(done.job, "Worker")["template"] == template  # the worker as it was
    assert any("nvidia.com/gpu" in note for note in done.notes), done.notes


@pytest.mark.parametrize("flag", ["-N", "-npernode", "--npernode"])
def test_ranks_per_node_in_the_extra_args_are_the_slots_per_worker(flag: str) -> None:
    job = convert(
        t9k_job(worker={**t9k_job()["spec"]["worker"], "extraMPIArgs": ["--bind-to", "none", flag, "4"]})
    ).job

    assert job["spec"]["slotsPerWorker"] == 4
    assert job["metadata"]["annotations"][f"{P}mpirun-extra-args"] == f"--bind-to none {flag} 4"


def test_without_ranks_per_node_the_slots_are_left_to_the_default() -> None:
    job = convert(t9k_job(worker={**t9k_job()["spec"]["worker"], "extraMPIArgs": ["-np", "4"]})).job

    assert "slotsPerWorker" not in job["spec"]


def test_the_mpi_worker_container_goes_first_as_upstream_takes_the_first() -> None:
    sidecar = {"name": "log-shipper", "image": "shipper"}
    template = {"spec": {"containers": [sidecar, {"name": "mpi-worker", "image": "img"}]}}

    job = convert(t9k_job(worker={"cmd": ["/opt/walk"], "template": template})).job

    names = [c["name"] for c in replicas(job, "Worker")["template"]["spec"]["containers"]]
    assert names == ["mpi-worker", "log-shipper"]
    names = [c["name"] for c in replicas(job, "Launcher")["template"]["spec"]["containers"]]
    assert names == ["mpi-launcher", "log-shipper"]


def test_sshd_path_is_the_worker_command_unless_the_container_has_its_own() -> None:
    job = convert(t9k_job(ssh={"sshdPath": "/opt/ssh/sbin/sshd"})).job
    worker = replicas(job, "Worker")["template"]["spec"]["containers"][0]
    assert worker["command"] == ["/opt/ssh/sbin/sshd", "-De"]

    body = t9k_job(ssh={"sshdPath": "/usr/sbin/sshd"})
    body["spec"]["worker"]["template"]["spec"]["containers"][0]["args"] = [
        "/usr/sbin/sshd",
        "-De",
        "-p",
        "22",
    ]
    done = convert(body)
    worker = replicas(done.job, "Worker")["template"]["spec"]["containers"][0]
    assert (worker.get("command"), worker["args"]) == (None, ["/usr/sbin/sshd", "-De", "-p", "22"])
    assert any("sshdPath is not used" in note for note in done.notes), done.notes


def test_ssh_auth_mount_path_is_the_jobs_and_the_flag_wins() -> None:
    assert convert(t9k_job(ssh={"sshAuthMountPath": "/home/u/.ssh"})).job["spec"]["sshAuthMountPath"] == (
        "/home/u/.ssh"
    )
    done = convert(t9k_job(ssh={"sshAuthMountPath": "/home/u/.ssh"}), ssh_auth_mount_path="/home/v/.ssh")
    assert done.job["spec"]["sshAuthMountPath"] == "/home/v/.ssh"


def test_a_non_root_container_without_a_mount_path_is_warned_about() -> None:
    body = t9k_job()
    body["spec"]["worker"]["template"]["spec"]["securityContext"] = {"runAsUser": 1000}

    done = convert(body)

    assert any("--ssh-auth-mount-path" in warning for warning in done.warnings), done.warnings


@pytest.mark.parametrize(
    ("value", "policy"),
    [(True, "All"), (False, "None"), ("all", "All"), ("unfinished", "Running"), ("None", "None")],
)
def test_clean_up_workers_in_both_of_t9ks_forms_is_the_clean_pod_policy(value: Any, policy: str) -> None:
    job = convert(t9k_job(runPolicy={"cleanUpWorkers": value})).job

    assert job["spec"]["runPolicy"]["cleanPodPolicy"] == policy


def test_an_unknown_clean_up_value_is_refused() -> None:
    with pytest.raises(ConversionError, match="cleanUpWorkers: unknown value 'sometimes'"):
        convert(t9k_job(runPolicy={"cleanUpWorkers": "sometimes"}))


def test_debug_mode_and_each_replicas_debug_settings_are_annotations() -> None:
    debug = {
        "enabled": True,
        "replicaSpecs": [
            {"type": "master", "command": ["sleep", "7200"]},
            {"type": "worker", "skipInitContainer": True, "command": ["sleep", "inf"]},
        ],
    }

    done = convert(t9k_job(runMode={"debug": debug}))

    annotations = done.job["metadata"]["annotations"]
    assert annotations[f"{P}debug-mode"] == "true"
    assert annotations[f"{P}debug-command"] == "sleep 7200"
    assert annotations[f"{P}debug-worker-command"] == "sleep inf"
    assert annotations[f"{P}debug-skip-init-containers"] == "Worker"
    assert not [w for w in done.warnings if "runMode" in w], done.warnings


def test_pause_is_suspend_and_resume_specs_are_the_resume_annotations() -> None:
    pause = {
        "enable": True,
        "resumeSpecs": [
            {"type": "worker", "command": ["/usr/sbin/sshd"], "args": ["-De"], "skipInitContainer": True},
            {"type": "launcher", "command": ["mpirun", "./train"], "skipInitContainer": True},
        ],
    }

    done = convert(t9k_job(runMode={"pause": pause}))

    assert done.job["spec"]["runPolicy"] == {"suspend": True}
    annotations = done.job["metadata"]["annotations"]
    assert annotations[f"{P}resume-worker-command"] == "/usr/sbin/sshd -De"
    assert annotations[f"{P}resume-launcher-command"] == "mpirun ./train"
    assert annotations[f"{P}resume-skip-init-containers"] == "Worker,Launcher"
    assert not [w for w in done.warnings if "runMode" in w], done.warnings


def test_a_setting_of_a_mode_this_operator_has_no_place_for_is_named() -> None:
    debug = {"enabled": True, "replicaSpecs": [{"type": "worker", "image": "debug:latest"}]}

    done = convert(t9k_job(runMode={"debug": debug}))

    assert any("replicaSpecs[0].image" in w for w in done.warnings), done.warnings


def test_a_mode_for_an_unknown_replica_type_is_refused() -> None:
    with pytest.raises(ConversionError, match=r"resumeSpecs\[0\]\.type: unknown replica type 'ps'"):
        convert(t9k_job(runMode={"pause": {"resumeSpecs": [{"type": "ps"}]}}))


def test_t9k_scheduler_queue_is_the_scheduling_policys_and_priority_is_warned_about() -> None:
    done = convert(t9k_job(scheduler={"t9kScheduler": {"queue": "default", "priority": 50}}))

    assert done.job["spec"]["runPolicy"] == {"schedulingPolicy": {"queue": "default"}}
    assert any("priority is not converted: 50" in w for w in done.warnings), done.warnings
    assert any("--gang-scheduling=volcano" in note for note in done.notes), done.notes


def test_newer_shape_with_mpi_config_replica_specs_and_restart_policies() -> None:
    body = {
        "apiVersion": "batch.tensorstack.dev/v1beta1",
        "kind": "MPIJob",
        "metadata": {"name": "newer"},
        "spec": {
            "mpiConfig": {
                "mca": {"btl": "^openib"},
                "home": "/usr",
                "extraArgs": ["-N", "2"],
                "script": ["/opt/a"],
            },
            "replicaSpecs": [
                {
                    "type": "worker",
                    "replicas": 3,
                    "restartPolicy": {"policy": "OnFailure", "limit": 4},
                    "template": {"spec": {"containers": [{"name": "mpi-worker", "image": "img"}]}},
                },
                {
                    "type": "launcher",
                    "restartPolicy": {"policy": "Never", "limit": 2},
                    "template": {"spec": {"containers": [{"name": "l", "image": "launcher-img"}]}},
                },
            ],
        },
    }

    done = convert(body)

    job = done.job
    assert job["metadata"]["annotations"] == {
        f"{P}launcher-program": "/opt/a",
        f"{P}mpirun-extra-args": "-N 2",
        f"{P}mca-params": "btl=^openib\n",
        f"{P}mpi-home": "/usr",
    }
    assert (
        replicas(job, "Worker")["replicas"] == 3 and replicas(job, "Worker")["restartPolicy"] == "OnFailure"
    )
    launcher = replicas(job, "Launcher")
    assert launcher["restartPolicy"] == "Never"
    assert launcher["template"]["spec"]["containers"] == [{"name": "l", "image": "launcher-img"}]
    assert job["spec"]["runPolicy"] == {"backoffLimit": 2}
    assert any("limit 4 is not converted" in w for w in done.warnings), done.warnings


def test_unknown_t9k_fields_are_each_named_and_server_fields_left_out() -> None:
    body = t9k_job(tensorboard={"enabled": True})
    body["spec"]["worker"]["extraThing"] = 1
    body["metadata"].update(
        uid="u-1",
        resourceVersion="9",
        annotations={"kubectl.kubernetes.io/last-applied-configuration": "{}", "team": "a"},
    )
    body["status"] = {"phase": "Running"}

    done = convert(body)

    assert sorted(w.split(" is not converted")[0] for w in done.warnings) == [
        "spec.tensorboard",
        "spec.worker.extraThing",
    ]
    assert done.job["metadata"]["annotations"]["team"] == "a"
    assert "kubectl.kubernetes.io/last-applied-configuration" not in done.job["metadata"]["annotations"]
    assert "uid" not in done.job["metadata"] and "status" not in done.job
    assert any("uid, resourceVersion" in note for note in done.notes), done.notes


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"worker": {"cmd": ["/a"]}}, "spec.worker.template is required"),
        (
            {"worker": {"template": {"spec": {"containers": [{"name": "mpi-worker"}]}}}},
            "spec.worker.cmd is required",
        ),
        ({"worker": {"cmd": "/a", "template": {"spec": {"containers": []}}}}, "containers is empty"),
        ({"mca": ["btl=^openib"]}, "spec.mca must be a map"),
        ({"replicaSpecs": [{"type": "ps"}]}, "unknown replica type 'ps'"),
    ],
)
def test_t9k_manifests_that_cannot_be_converted_are_refused(change: dict[str, Any], message: str) -> None:
    with pytest.raises(ConversionError, match=message):
        convert(t9k_job(**change))


def test_a_relative_program_without_a_working_dir_is_named_as_the_operator_would_refuse_it() -> None:
    done = convert(
        t9k_job(
            worker={
                "cmd": ["./walk"],
                "template": {"spec": {"containers": [{"name": "mpi-worker", "image": "i"}]}},
            }
        )
    )

    assert any(
        w.startswith("the operator would refuse the converted job") and "launcher-program" in w
        for w in done.warnings
    ), done.warnings
