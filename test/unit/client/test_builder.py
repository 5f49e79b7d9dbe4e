"""MPIJobBuilder writes the v2beta1 object a user would write by hand, and refuses what the operator would
refuse, naming the field."""

from __future__ import annotations

import pytest

from mpioperator.api.defaults import set_defaults
from mpioperator.api.validation import validate_mpijob
from mpioperator.client import InvalidMPIJob, MPIJobBuilder

PI = "mpioperator/mpi-pi:openmpi"


def test_a_few_lines_build_the_pi_example() -> None:
    job = (
        MPIJobBuilder("pi")
        .image(PI)
        .workers(2)
        .slots_per_worker(1)
        .run_as_user(1000)
        .ssh_auth_mount_path("/home/mpiuser/.ssh")
        .launcher_command("mpirun", "-n", "2", "/home/mpiuser/pi")
        .worker_command("/usr/sbin/sshd", "-De", "-f", "/home/mpiuser/.sshd_config")
        .resources(cpu="500m", memory="1Gi")
        .clean_pod_policy("Running")
        .ttl_seconds_after_finished(60)
        .build()
    )

    assert job == {
        "apiVersion": "kubeflow.org/v2beta1",
        "kind": "MPIJob",
        "metadata": {"name": "pi"},
        "spec": {
            "slotsPerWorker": 1,
            "sshAuthMountPath": "/home/mpiuser/.ssh",
            "runPolicy": {"cleanPodPolicy": "Running", "ttlSecondsAfterFinished": 60},
            "mpiReplicaSpecs": {
                "Launcher": {
                    "replicas": 1,
                    "template": {
                        "spec": {
                            "containers": [
                                {
                                    "name": "launcher",
                                    "image": PI,
                                    "command": ["mpirun", "-n", "2", "/home/mpiuser/pi"],
                                    "resources": {"limits": {"cpu": "500m", "memory": "1Gi"}},
                                    "securityContext": {"runAsUser": 1000},
                                }
                            ]
                        }
                    },
                },
                "Worker": {
                    "replicas": 2,
                    "template": {
                        "spec": {
                            "containers": [
                                {
                                    "name": "worker",
                                    "image": PI,
                                    "command": ["/usr/sbin/sshd", "-De", "-f", "/home/mpiuser/.sshd_config"],
                                    "resources": {"limits": {"cpu": "500m", "memory": "1Gi"}},
                                    "securityContext": {"runAsUser": 1000},
                                }
                            ]
                        }
                    },
                },
            },
        },
    }
    assert validate_mpijob(set_defaults(job)) == []


def test_every_v2beta1_spec_field_has_a_setter() -> None:
    job = (
        MPIJobBuilder("all", namespace="team-a")
        .image(PI)
        .implementation("Intel")
        .launcher_creation_policy("WaitForWorkersReady")
        .run_launcher_as_worker()
        .active_deadline_seconds(600)
        .backoff_limit(3)
        .suspend()
        .managed_by("kueue.x-k8s.io/multikueue")
        .scheduling(min_available=3, queue="q", priority_class="high", schedule_timeout_seconds=30)
        .label("team", "a")
        .annotation("note", "n")
        .launcher(restart_policy="Never")
        .build()
    )

    spec = job["spec"]
    assert job["metadata"] == {
        "name": "all",
        "namespace": "team-a",
        "labels": {"team": "a"},
        "annotations": {"note": "n"},
    }
    assert spec["mpiImplementation"] == "Intel"
    assert spec["launcherCreationPolicy"] == "WaitForWorkersReady"
    assert spec["runLauncherAsWorker"] is True
    assert spec["runPolicy"] == {
        "activeDeadlineSeconds": 600,
        "backoffLimit": 3,
        "suspend": True,
        "managedBy": "kueue.x-k8s.io/multikueue",
        "schedulingPolicy": {
            "minAvailable": 3,
            "queue": "q",
            "priorityClass": "high",
            "scheduleTimeoutSeconds": 30,
        },
    }
    assert spec["mpiReplicaSpecs"]["Launcher"]["restartPolicy"] == "Never"


def test_per_replica_settings_touch_only_that_side() -> None:
    job = (
        MPIJobBuilder("side")
        .image(PI)
        .worker(image="other:1")
        .env("OMPI_X", "1", replica="Launcher")
        .resources(gpus=8, replica="Worker")
        .pod_annotation("sim.mpioperator.io/run-for", "2s", replica="Launcher")
        .node_selector("pool", "gpu", replica="Worker")
        .build()
    )

    launcher = job["spec"]["mpiReplicaSpecs"]["Launcher"]["template"]
    worker = job["spec"]["mpiReplicaSpecs"]["Worker"]["template"]
    assert launcher["spec"]["containers"][0]["image"] == PI
    assert launcher["spec"]["containers"][0]["env"] == [{"name": "OMPI_X", "value": "1"}]
    assert launcher["metadata"] == {"annotations": {"sim.mpioperator.io/run-for": "2s"}}
    assert "resources" not in launcher["spec"]["containers"][0]
    assert worker["spec"]["containers"][0]["image"] == "other:1"
    assert worker["spec"]["containers"][0]["resources"] == {"limits": {"nvidia.com/gpu": "8"}}
    assert worker["spec"]["nodeSelector"] == {"pool": "gpu"}
    assert "metadata" not in worker and "env" not in worker["spec"]["containers"][0]


def test_a_whole_template_replaces_what_the_builder_would_write() -> None:
    template = {"spec": {"containers": [{"name": "mine", "image": "x:1", "ports": [{"containerPort": 22}]}]}}
    job = MPIJobBuilder("raw").image(PI).worker(template=template).build()
    template["spec"]["containers"][0]["name"] = "changed later"

    worker = job["spec"]["mpiReplicaSpecs"]["Worker"]["template"]
    assert worker == {
        "spec": {"containers": [{"name": "mine", "image": "x:1", "ports": [{"containerPort": 22}]}]}
    }


def test_launcher_only_job_has_no_worker_spec() -> None:
    job = MPIJobBuilder("solo").image(PI).without_workers().run_launcher_as_worker().build()
    assert set(job["spec"]["mpiReplicaSpecs"]) == {"Launcher"}


def test_build_twice_gives_independent_objects() -> None:
    builder = MPIJobBuilder("twice").image(PI).env("A", "1")
    first = builder.build()
    first["spec"]["mpiReplicaSpecs"]["Launcher"]["template"]["spec"]["containers"][0]["env"].append(
        {"name": "B"}
    )
    assert builder.build()["spec"]["mpiReplicaSpecs"]["Launcher"]["template"]["spec"]["containers"][0][
        "env"
    ] == [{"name": "A", "value": "1"}]


def test_missing_image_is_named_with_its_field() -> None:
    with pytest.raises(InvalidMPIJob) as raised:
        MPIJobBuilder("noimage").launcher(image="x:1").build()
    message = str(raised.value)
    assert message.startswith("MPIJob noimage is invalid: ")
    assert "spec.mpiReplicaSpecs[Worker].template.spec.containers[0].image: Required value" in message
    assert "[Launcher]" not in message


def test_name_too_long_for_worker_hostnames_is_refused_as_the_operator_would() -> None:
    with pytest.raises(InvalidMPIJob, match="invalid DNS label"):
        MPIJobBuilder("a" * 60).image(PI).workers(10).build()


def test_negative_numbers_are_refused_with_their_fields() -> None:
    with pytest.raises(InvalidMPIJob) as raised:
        MPIJobBuilder("neg").image(PI).slots_per_worker(-1).backoff_limit(-2).build()
    assert "spec.slotsPerWorker: Invalid value: -1" in str(raised.value)
    assert "spec.runPolicy.backoffLimit: Invalid value: -2" in str(raised.value)


def test_zero_workers_are_refused() -> None:
    with pytest.raises(InvalidMPIJob, match=r"spec.mpiReplicaSpecs\[Worker\].replicas: Invalid value: 0"):
        MPIJobBuilder("zero").image(PI).workers(0).build()


def test_worker_settings_after_without_workers_are_refused() -> None:
    with pytest.raises(InvalidMPIJob, match="Worker was removed by without_workers"):
        MPIJobBuilder("gone").image(PI).without_workers().worker(image="x")
