"""`kubectl mpijob`'s command line: kubectl's global flags anywhere, the launcher's command after `--`,
and usage mistakes refused with exit code 2 before anything talks to a cluster."""

from __future__ import annotations

import pytest

from mpioperator.cli.parser import parse


def usage_error(argv: list[str], capsys: pytest.CaptureFixture[str]) -> str:
    with pytest.raises(SystemExit) as exited:
        parse(argv)
    assert exited.value.code == 2
    return capsys.readouterr().err


def test_global_flags_before_the_command() -> None:
    args = parse(["--kubeconfig", "/k", "--context", "c", "-n", "team-a", "list"])
    assert (args.kubeconfig, args.context, args.namespace, args.command) == ("/k", "c", "team-a", "list")


def test_global_flags_after_the_command() -> None:
    args = parse(["describe", "pi", "--namespace", "team-b", "--kubeconfig=/k"])
    assert (args.namespace, args.kubeconfig, args.name) == ("team-b", "/k", "pi")


def test_global_flags_not_given_are_absent_so_kubeconfig_rules_apply() -> None:
    args = parse(["list"])
    assert not hasattr(args, "namespace") and not hasattr(args, "kubeconfig") and not hasattr(args, "context")


def test_submit_from_flags_takes_the_launcher_command_after_double_dash() -> None:
    args = parse(
        [
            "submit",
            "pi",
            "--image",
            "img",
            "--workers",
            "2",
            "--slots",
            "4",
            "--implementation",
            "MPICH",
            "--",
            "mpirun",
            "-n",
            "8",
            "--bind-to",
            "core",
            "/home/mpiuser/pi",
        ]
    )
    assert (args.name, args.image, args.workers, args.slots, args.implementation) == (
        "pi",
        "img",
        2,
        4,
        "MPICH",
    )
    assert args.launcher_argv == ["mpirun", "-n", "8", "--bind-to", "core", "/home/mpiuser/pi"]


def test_submit_command_may_be_one_quoted_string() -> None:
    args = parse(
        [
            "submit",
            "pi",
            "--image",
            "img",
            "--command",
            "mpirun -n 2 '/path with space/pi'",
            "--worker-command",
            "/usr/sbin/sshd -De",
        ]
    )
    assert args.launcher_argv == ["mpirun", "-n", "2", "/path with space/pi"]
    assert args.worker_argv == ["/usr/sbin/sshd", "-De"]


def test_submit_from_a_file() -> None:
    args = parse(["submit", "-f", "pi.yaml", "-n", "team-a"])
    assert (args.filename, args.namespace) == ("pi.yaml", "team-a")


def test_submit_needs_a_file_or_a_name_and_an_image(capsys: pytest.CaptureFixture[str]) -> None:
    assert "give -f FILE, or a NAME and --image" in usage_error(["submit", "pi"], capsys)
    assert "give -f FILE, or a NAME and --image" in usage_error(["submit", "--image", "x"], capsys)


def test_submit_file_and_job_flags_do_not_mix(capsys: pytest.CaptureFixture[str]) -> None:
    assert "-f takes the whole job from the file" in usage_error(
        ["submit", "-f", "a.yaml", "--image", "x"], capsys
    )


def test_submit_command_given_twice_is_refused(capsys: pytest.CaptureFixture[str]) -> None:
    err = usage_error(["submit", "pi", "--image", "x", "--command", "a", "--", "b"], capsys)
    assert "either with --command or after --" in err


@pytest.mark.parametrize(("flag", "value"), [("--workers", "0"), ("--slots", "-1"), ("--gpus", "0")])
def test_counts_below_one_are_refused(flag: str, value: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert "must be at least 1" in usage_error(["submit", "pi", "--image", "x", flag, value], capsys)


def test_unknown_implementation_is_refused(capsys: pytest.CaptureFixture[str]) -> None:
    assert "invalid choice: 'MVAPICH'" in usage_error(
        ["submit", "pi", "--image", "x", "--implementation", "MVAPICH"], capsys
    )


def test_wait_timeout_accepts_seconds_with_or_without_unit() -> None:
    assert parse(["wait", "pi", "--timeout", "90"]).timeout == 90.0
    assert parse(["wait", "pi", "--timeout", "90s"]).timeout == 90.0


def test_wait_timeout_must_be_positive(capsys: pytest.CaptureFixture[str]) -> None:
    assert "must be more than 0 seconds" in usage_error(["wait", "pi", "--timeout", "0"], capsys)


def test_each_command_is_parsed_with_its_flags() -> None:
    assert parse(["list", "-A"]).all_namespaces
    logs = parse(["logs", "pi", "-f", "--tail", "5"])
    assert (logs.follow, logs.tail) == (True, 5)
    assert parse(["delete", "pi", "--wait"]).wait
    assert parse(["suspend", "pi"]).name == "pi"
    assert parse(["resume", "pi"]).name == "pi"
    assert parse(["wait", "pi", "-q"]).quiet


def test_a_command_is_required(capsys: pytest.CaptureFixture[str]) -> None:
    assert "required: COMMAND" in usage_error([], capsys)


def test_arguments_after_double_dash_belong_only_to_submit(capsys: pytest.CaptureFixture[str]) -> None:
    assert "unexpected arguments after --: x" in usage_error(["logs", "pi", "--", "x"], capsys)
