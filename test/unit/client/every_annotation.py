"""What a job with every one of the operator's annotations set carries, as the completeness tests of the
SDK's setters and of the CLI's submit flags both build it: the same values through either."""

from __future__ import annotations

from mpioperator.api import annotation_keys

EVERY_ANNOTATION = {
    "mpioperator.io/worker-startup-deadline-seconds": "300",
    "mpioperator.io/keep-failed-launcher": "true",
    "mpioperator.io/wait-for-ssh-port": "2222",
    "mpioperator.io/restart-policy": "OnFailure",
    "mpioperator.io/max-restarts": "5",
    "mpioperator.io/restart-backoff-seconds": "30",
    "mpioperator.io/launch-agent": "exec",
    "mpioperator.io/debug-mode": "true",
    "mpioperator.io/debug-command": "sh -c 'sleep 7200'",
    "mpioperator.io/launcher-program": "/home/mpiuser/pi --digits 9",
    "mpioperator.io/mpirun-extra-args": "--bind-to none",
    "mpioperator.io/mca-params": "btl=self,tcp\nbtl_tcp_if_include=eth0",
    "mpioperator.io/mpi-home": "/usr",
    "mpioperator.io/ssh-secret": "site-keys",
    "mpioperator.io/roll-workers-on-template-change": "true",
    "mpioperator.io/hostfile-path": "/kubeflow/openmpi/assets/hostfile",
    # dns, set explicitly: ip cannot go with the exec agent above
    "mpioperator.io/hostfile-addresses": "dns",
    "mpioperator.io/debug-worker-command": "sleep infinity",
    "mpioperator.io/debug-skip-init-containers": "Launcher,Worker",
    "mpioperator.io/resume-launcher-command": "/home/mpiuser/resume.sh --from-checkpoint",
    "mpioperator.io/resume-worker-command": "/usr/sbin/sshd -De",
    "mpioperator.io/resume-skip-init-containers": "Worker",
    "mpioperator.io/min-workers": "1",
    "mpioperator.io/max-workers": "3",
    "mpioperator.io/progress": "json",
    "mpioperator.io/stall-timeout-seconds": "600",
    "mpioperator.io/stall-action": "fail",
}


def documented_annotations() -> set[str]:
    """Every job annotation the operator reads: the keys of the one table."""
    return {entry.key for entry in annotation_keys.TABLE}


def assert_every_annotation(annotations: dict[str, str]) -> None:
    """The annotations are the expected values, and they cover every annotation the operator reads."""
    assert annotations == EVERY_ANNOTATION
    assert set(annotations) == documented_annotations()
