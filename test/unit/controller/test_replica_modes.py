"""Debug mode's and a resume's settings per replica type: what the launcher and worker pods run and which
init containers they keep, and the annotations' bad values."""

from __future__ import annotations

import pytest

from mpioperator.api.extensions import replica_modes
from mpioperator.api.objects import Obj
from mpioperator.api.validation import validate_mpijob
from mpioperator.controller.decorators.compose import new_launcher_job, new_worker
from mpioperator.controller.decorators.launcher_command import made_after_resume, made_for_debug
from test.unit.controller.jobs import reference_job

P = "mpioperator.io/"
INIT = [{"name": "fetch-data", "image": "busybox", "command": ["sh", "-c", "sleep 600"]}]


def _job(annotations: dict[str, str], *, resumed: bool = False) -> Obj:
    job = reference_job(workers=2)
    job["metadata"]["annotations"] = annotations
    for replica in job["spec"]["mpiReplicaSpecs"].values():
        replica["template"]["spec"]["initContainers"] = list(INIT)
    job["spec"]["mpiReplicaSpecs"]["Worker"]["template"]["spec"]["containers"][0]["args"] = ["--serve"]
    if resumed:
        job["status"] = {"conditions": [{"type": "Suspended", "status": "False", "reason": "MPIJobResumed"}]}
    return job


def _launcher_spec(job: Obj) -> Obj:
    spec: Obj = new_launcher_job(job)[0]["spec"]["template"]["spec"]
    return spec


def test_debug_mode_runs_the_workers_command_and_leaves_out_the_init_containers_asked_for() -> None:
    job = _job(
        {
            f"{P}debug-mode": "true",
            f"{P}debug-worker-command": "sleep infinity",
            f"{P}debug-skip-init-containers": "Worker",
        }
    )
    worker = new_worker(job, 0)["spec"]
    assert worker["containers"][0]["command"] == ["sleep", "infinity"]
    assert "args" not in worker["containers"][0] and "initContainers" not in worker
    launcher = _launcher_spec(job)
    assert launcher["containers"][0]["command"] == ["sleep", "infinity"], "debug-command's default"
    assert launcher["initContainers"] == INIT, "only the types named lose theirs"


def test_debug_mode_can_leave_out_the_launchers_init_containers_too() -> None:
    job = _job({f"{P}debug-mode": "true", f"{P}debug-skip-init-containers": "Launcher, Worker"})
    assert "initContainers" not in _launcher_spec(job)
    worker = new_worker(job, 1)["spec"]
    assert "initContainers" not in worker and worker["containers"][0]["args"] == ["--serve"]


def test_resume_settings_apply_to_pods_made_after_a_resume_only() -> None:
    annotations = {
        f"{P}resume-launcher-command": "/resume.sh --from /ckpt",
        f"{P}resume-worker-command": "/usr/sbin/sshd -De",
        f"{P}resume-skip-init-containers": "Launcher",
    }
    before = _job(annotations)
    assert _launcher_spec(before)["containers"][0]["command"] == ["mpirun"]
    assert new_worker(before, 0)["spec"]["containers"][0]["args"] == ["--serve"]

    after = _job(annotations, resumed=True)
    launcher, made = _launcher_spec(after), new_launcher_job(after)[0]
    assert launcher["containers"][0]["command"] == ["/resume.sh", "--from", "/ckpt"]
    assert "args" not in launcher["containers"][0] and "initContainers" not in launcher
    assert made_after_resume(made) and not made_for_debug(made)
    worker = new_worker(after, 0)["spec"]
    assert worker["containers"][0]["command"] == ["/usr/sbin/sshd", "-De"]
    assert worker["initContainers"] == INIT


def test_a_suspended_job_is_not_resumed_and_debug_mode_wins_over_a_resume() -> None:
    job = _job({f"{P}resume-worker-command": "true"}, resumed=True)
    job["spec"]["runPolicy"]["suspend"] = True
    assert replica_modes.override(job, "Worker") is None
    both = _job({f"{P}debug-mode": "true", f"{P}resume-worker-command": "true"}, resumed=True)
    assert replica_modes.override(both, "Worker") is None, "in debug mode the workers run their own"
    assert not made_after_resume(new_launcher_job(both)[0])


def test_without_the_annotations_nothing_changes_even_after_a_resume() -> None:
    job = _job({}, resumed=True)
    assert replica_modes.override(job, "Launcher") is None
    assert _launcher_spec(job)["initContainers"] == INIT


@pytest.mark.parametrize(
    ("annotation", "value", "detail"),
    [
        ("debug-skip-init-containers", "launcher", "must name Launcher, Worker or both, comma-separated"),
        ("resume-skip-init-containers", " , ", "must name Launcher, Worker or both, comma-separated"),
        ("resume-worker-command", "sh -c 'x", "unbalanced quotes"),
        ("debug-worker-command", "  ", "must name a command"),
        ("resume-launcher-command", "", "must name a command"),
    ],
)
def test_bad_values_are_validation_errors_naming_the_annotation(
    annotation: str, value: str, detail: str
) -> None:
    errors = [str(e) for e in validate_mpijob(_job({f"{P}{annotation}": value}))]
    assert len(errors) == 1 and f"metadata.annotations[{P}{annotation}]" in errors[0], errors
    assert detail in errors[0]


def test_a_command_longer_than_sixteen_kibibytes_is_too_long() -> None:
    errors = [str(e) for e in validate_mpijob(_job({f"{P}resume-launcher-command": "x" * 16385}))]
    assert errors == [
        f"metadata.annotations[{P}resume-launcher-command]: Too long: may not be more than 16384 bytes"
    ]
