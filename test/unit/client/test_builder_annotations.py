"""The builder's setters for the operator's annotations, and env() with valueFrom."""

from __future__ import annotations

import pytest

from mpioperator.api.extensions import conveniences
from mpioperator.client import InvalidMPIJob, MPIJobBuilder
from test.unit.client.every_annotation import assert_every_annotation

PI = "mpioperator/mpi-pi:openmpi"


def test_every_annotation_of_the_operator_has_a_setter() -> None:
    job = (
        MPIJobBuilder("all")
        .image(PI)
        .worker_startup_deadline_seconds(300)
        .keep_failed_launcher()
        .launch_agent("exec")
        .wait_for_ssh_port(2222)
        .restart_whole_job("OnFailure", max_restarts=5, backoff_seconds=30)
        .debug_mode(
            command=["sh", "-c", "sleep 7200"],
            worker_command=["sleep", "infinity"],
            skip_init_containers=["Launcher", "Worker"],
        )
        .on_resume(
            launcher_command=["/home/mpiuser/resume.sh", "--from-checkpoint"],
            worker_command=["/usr/sbin/sshd", "-De"],
            skip_init_containers=["Worker"],
        )
        .launcher_program(
            "/home/mpiuser/pi",
            "--digits",
            "9",
            mpirun_args=["--bind-to", "none"],
            mca={"btl": "self,tcp", "btl_tcp_if_include": "eth0"},
            mpi_home="/usr",
        )
        .ssh_secret("site-keys")
        .roll_workers_on_template_change()
        .hostfile_path("/kubeflow/openmpi/assets/hostfile")
        .worker_bounds(1, 3)
        .progress("json")
        .stall_timeout(600, fail=True)
        .hostfile_addresses("dns")
        .build()
    )

    assert_every_annotation(job["metadata"]["annotations"])


def test_switches_can_be_set_off_and_the_generated_line_parsed_back() -> None:
    job = (
        MPIJobBuilder("off")
        .image(PI)
        .debug_mode(False)
        .keep_failed_launcher(False)
        .roll_workers_on_template_change(False)
        .launcher_program("/opt/my app/run", "a b")
        .build()
    )

    annotations = job["metadata"]["annotations"]
    assert annotations["mpioperator.io/debug-mode"] == "false"
    assert annotations["mpioperator.io/keep-failed-launcher"] == "false"
    assert annotations["mpioperator.io/roll-workers-on-template-change"] == "false"
    program = conveniences.launcher_program(job)
    assert program is not None and program.program == ("/opt/my app/run", "a b")


@pytest.mark.parametrize(
    ("builder", "field"),
    [
        (MPIJobBuilder("bad").image(PI).hostfile_path("hostfile"), "mpioperator.io/hostfile-path"),
        (MPIJobBuilder("bad").image(PI).worker_bounds(0), "mpioperator.io/min-workers"),
        (MPIJobBuilder("bad").image(PI).worker_bounds(3, 2), "mpioperator.io/min-workers"),
        (MPIJobBuilder("bad").image(PI).ssh_secret("My_Keys"), "mpioperator.io/ssh-secret"),
        (MPIJobBuilder("bad").image(PI).launch_agent("rsh"), "mpioperator.io/launch-agent"),
        (
            MPIJobBuilder("bad").image(PI).worker_startup_deadline_seconds(-1),
            "mpioperator.io/worker-startup-deadline-seconds",
        ),
        (MPIJobBuilder("bad").image(PI).wait_for_ssh_port(70000), "mpioperator.io/wait-for-ssh-port"),
        (MPIJobBuilder("bad").image(PI).restart_whole_job("Always"), "mpioperator.io/restart-policy"),
        (MPIJobBuilder("bad").image(PI).restart_whole_job(max_restarts=-1), "mpioperator.io/max-restarts"),
        (
            MPIJobBuilder("bad").image(PI).launcher_command("mpirun").launcher_program("/p"),
            "mpioperator.io/launcher-program",
        ),
    ],
)
def test_a_bad_annotation_value_is_refused_by_build_naming_the_annotation(
    builder: MPIJobBuilder, field: str
) -> None:
    with pytest.raises(InvalidMPIJob) as caught:
        builder.build()
    assert f"metadata.annotations[{field}]" in str(caught.value)


def test_env_takes_a_value_or_a_value_from_source() -> None:
    secret_ref = {"secretKeyRef": {"name": "wandb", "key": "token"}}
    job = (
        MPIJobBuilder("env")
        .image(PI)
        .env("MODE", "fast")
        .env("TOKEN", value_from=secret_ref, replica="Launcher")
        .env("NODE", value_from={"fieldRef": {"fieldPath": "spec.nodeName"}}, replica="Worker")
        .build()
    )
    secret_ref["secretKeyRef"]["key"] = "changed later"

    replicas = job["spec"]["mpiReplicaSpecs"]
    launcher = replicas["Launcher"]["template"]["spec"]["containers"][0]["env"]
    worker = replicas["Worker"]["template"]["spec"]["containers"][0]["env"]
    assert launcher == [
        {"name": "MODE", "value": "fast"},
        {"name": "TOKEN", "valueFrom": {"secretKeyRef": {"name": "wandb", "key": "token"}}},
    ]
    assert worker == [
        {"name": "MODE", "value": "fast"},
        {"name": "NODE", "valueFrom": {"fieldRef": {"fieldPath": "spec.nodeName"}}},
    ]


@pytest.mark.parametrize("kwargs", [{}, {"value": "v", "value_from": {"fieldRef": {"fieldPath": "x"}}}])
def test_env_needs_exactly_one_of_value_and_value_from(kwargs: dict[str, object]) -> None:
    with pytest.raises(InvalidMPIJob, match="give a value or value_from"):
        MPIJobBuilder("env").env("X", **kwargs)  # type: ignore[arg-type]
