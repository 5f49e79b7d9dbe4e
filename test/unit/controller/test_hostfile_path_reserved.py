"""`mpioperator.io/hostfile-path` may not put its directory over what the operator or the system mounts in
the launcher: the service account's token, the exec agent's delivery directory, the kernel's and the
system's directories. Such a job is Invalid, with one Warning event and no children."""

from __future__ import annotations

import pytest

from mpioperator.api.extensions.conveniences import HOSTFILE_PATH, hostfile_path, validate_conveniences
from test.unit.controller.sync_fixtures import Scene, job

TOKEN = "its directory would overlap /var/run/secrets, which holds the service account's token"
RUN_TOKEN = "its directory would overlap /run/secrets, which holds the service account's token"
AGENT = "its directory would overlap /opt/mpioperator-exec, which holds the exec agent"


def system(directory: str) -> str:
    return f"its directory would overlap {directory}, which holds the system's files"


@pytest.mark.parametrize(
    ("path", "detail"),
    [
        ("/var/run/secrets/kubernetes.io/serviceaccount/hostfile", TOKEN),
        ("/var/run/secrets/hostfile", TOKEN),
        ("/var/hostfile", TOKEN),
        ("/var/run/hostfile", TOKEN),
        ("/run/secrets/hostfile", RUN_TOKEN),
        ("/run/hostfile", RUN_TOKEN),
        ("/opt/mpioperator-exec/hostfile", AGENT),
        ("/opt/hostfile", AGENT),
        ("/proc/self/hostfile", system("/proc")),
        ("/sys/hostfile", system("/sys")),
        ("/dev/shm/hostfile", system("/dev")),
        ("/usr/hostfile", system("/usr")),
        ("/usr/local/bin/hostfile", system("/usr")),
        ("/bin/hostfile", system("/bin")),
        ("/sbin/hostfile", system("/sbin")),
        ("/lib/hostfile", system("/lib")),
        ("/lib64/x/hostfile", system("/lib64")),
    ],
)
def test_a_hostfile_path_over_a_reserved_mount_is_invalid(path: str, detail: str) -> None:
    pi = job(workers=1)
    pi["metadata"]["annotations"] = {HOSTFILE_PATH: path}
    assert [(e.field, e.detail) for e in validate_conveniences(pi)] == [
        (f"metadata.annotations[{HOSTFILE_PATH}]", detail)
    ]
    assert hostfile_path(pi) is None


@pytest.mark.parametrize(
    "path",
    [
        "/kubeflow/openmpi/assets/hostfile",
        "/workspace/hostfile",
        "/home/mpiuser/hostfile",
        "/etc/openmpi/hosts",
    ],
)
def test_a_hostfile_path_of_the_users_own_is_still_good(path: str) -> None:
    pi = job(workers=1)
    pi["metadata"]["annotations"] = {HOSTFILE_PATH: path}
    assert validate_conveniences(pi) == []
    assert hostfile_path(pi) == path


@pytest.mark.parametrize(
    "annotations",
    [
        {HOSTFILE_PATH: "/var/run/secrets/kubernetes.io/serviceaccount/hostfile"},
        {HOSTFILE_PATH: "/opt/mpioperator-exec/hostfile", "mpioperator.io/launch-agent": "exec"},
    ],
    ids=["token", "exec agent"],
)
async def test_a_job_whose_hostfile_path_would_hide_a_reserved_mount_is_invalid_with_one_event(
    annotations: dict[str, str],
) -> None:
    pi = job(workers=1)
    pi["metadata"]["annotations"] = annotations
    scene = Scene(pi)

    await scene.sync()

    assert scene.writer.calls == [("update_status", "mpijobs", "pi")]
    invalid = [c for c in scene.written_status()["conditions"] if c["type"] == "Invalid"]
    assert [(c["status"], c["reason"]) for c in invalid] == [("True", "ValidationError")]
    assert "mpioperator.io/hostfile-path" in invalid[0]["message"]
    assert [(kind, reason) for kind, reason, _ in scene.recorder.events] == [("Warning", "ValidationError")]
