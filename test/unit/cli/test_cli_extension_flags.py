"""submit's flags for the operator's annotations: each one sets its annotation through the SDK's setter."""

from __future__ import annotations

import pytest

from mpioperator.cli.commands import job_from_flags
from mpioperator.cli.parser import EXTENSION_FLAGS, parse
from mpioperator.client import InvalidMPIJob
from test.unit.cli.test_cli_args import usage_error
from test.unit.client.every_annotation import assert_every_annotation

BASE = ["submit", "pi", "--image", "img"]


def test_every_annotation_has_a_submit_flag() -> None:
    args = parse(
        [
            *BASE,
            "--worker-startup-deadline-seconds",
            "300",
            "--keep-failed-launcher",
            "--launch-agent",
            "exec",
            "--wait-for-ssh-port",
            "2222",
            "--restart-policy",
            "OnFailure",
            "--max-restarts",
            "5",
            "--restart-backoff-seconds",
            "30",
            "--debug",
            "--debug-command",
            "sh -c 'sleep 7200'",
            "--launcher-program",
            "/home/mpiuser/pi --digits 9",
            "--mpirun-args",
            "--bind-to none",
            "--mca",
            "btl=self,tcp",
            "--mca",
            "btl_tcp_if_include=eth0",
            "--mpi-home",
            "/usr",
            "--ssh-secret",
            "site-keys",
            "--roll-workers-on-template-change",
            "--hostfile-path",
            "/kubeflow/openmpi/assets/hostfile",
            "--hostfile-addresses",
            "dns",
            "--debug-worker-command",
            "sleep infinity",
            "--debug-skip-init-containers",
            "Launcher,Worker",
            "--resume-launcher-command",
            "/home/mpiuser/resume.sh --from-checkpoint",
            "--resume-worker-command",
            "/usr/sbin/sshd -De",
            "--resume-skip-init-containers",
            "Worker",
            "--min-workers",
            "1",
            "--max-workers",
            "3",
            "--progress",
            "json",
            "--stall-timeout-seconds",
            "600",
            "--stall-fail",
        ]
    )

    annotations = job_from_flags(args)["metadata"]["annotations"]

    assert_every_annotation(annotations)
    assert len(EXTENSION_FLAGS) == len(annotations)


def test_a_job_without_extension_flags_has_no_annotations() -> None:
    assert "annotations" not in job_from_flags(parse(BASE))["metadata"]


def test_a_bad_value_is_refused_naming_the_annotation() -> None:
    with pytest.raises(InvalidMPIJob, match=r"metadata.annotations\[mpioperator.io/hostfile-path\]"):
        job_from_flags(parse([*BASE, "--hostfile-path", "relative/hostfile"]))


@pytest.mark.parametrize("flag", ["--mpirun-args=-v", "--mca=btl=self", "--mpi-home=/usr"])
def test_mpirun_settings_need_the_launcher_program(flag: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert "need --launcher-program" in usage_error([*BASE, flag], capsys)


def test_extension_flags_do_not_mix_with_a_file(capsys: pytest.CaptureFixture[str]) -> None:
    err = usage_error(["submit", "-f", "a.yaml", "--ssh-secret", "k"], capsys)
    assert "-f takes the whole job from the file" in err
