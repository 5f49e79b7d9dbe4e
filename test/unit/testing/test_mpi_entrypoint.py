"""The mpi-pi images' entrypoint hands the container's environment to sshd, for ranks started over ssh."""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from mpioperator.testing.images.versions import REPO_ROOT

ENTRYPOINT = REPO_ROOT / "images" / "mpi-base" / "entrypoint.sh"
NOBODY = 65534


@pytest.fixture
def home() -> Iterator[Path]:
    # Not under pytest's tmp_path, which only root may enter.
    with tempfile.TemporaryDirectory(prefix="mpi-entrypoint-") as name:
        path = Path(name)
        path.chmod(0o777)
        yield path


def run_entrypoint_as_nobody(home: Path, env: dict[str, str]) -> str:
    """The entrypoint as a non-root container user (root's file would be the host's /etc/ssh one)."""
    # A copy in the user's home: the checkout may sit under a directory only root may enter (mktemp -d).
    script = home / "entrypoint.sh"
    shutil.copyfile(ENTRYPOINT, script)
    script.chmod(0o755)
    result = subprocess.run(
        [
            "setpriv",
            f"--reuid={NOBODY}",
            f"--regid={NOBODY}",
            "--clear-groups",
            "sh",
            str(script),
            "true",
        ],
        env={"PATH": "/usr/bin:/bin", "HOME": str(home), **env},
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    )
    assert result.stderr == ""
    return (home / ".sshd_environment").read_text()


@pytest.mark.skipif(os.geteuid() != 0, reason="setpriv to another user needs root")
def test_entrypoint_writes_the_containers_environment_as_one_sshd_setenv_line(home: Path) -> None:
    text = run_entrypoint_as_nobody(
        home,
        {
            "NCCL_DEBUG": "INFO",
            "ODD": 'a "b" \\c #d',
            "TWO_LINES": "x\ny",
            "SSH_AUTH_SOCK": "/s",
            "SHLVL": "3",
        },
    )
    lines = text.splitlines()
    assert len(lines) == 1 and lines[0].startswith("SetEnv ")
    # sshd_config splits arguments as a shell would for double quotes and backslashes.
    settings = dict(word.split("=", 1) for word in shlex.split(lines[0])[1:])
    assert settings["NCCL_DEBUG"] == "INFO"
    assert settings["ODD"] == 'a "b" \\c #d'
    assert settings["PATH"] == "/usr/bin:/bin"
    # sshd sets these for the login itself; a value with a newline cannot be said in sshd_config.
    assert not {"HOME", "SHLVL", "SSH_AUTH_SOCK", "TWO_LINES"} & set(settings)


# A getent that answers like a launcher pod's: its own names from /etc/hosts at once (the kubelet writes
# them there), and from DNS (`-s dns`) only from the third DNS lookup on, as when the launcher's record
# is not yet published. Each lookup is logged; so is the command the entrypoint runs.
FAKE_GETENT = """#!/bin/sh
echo "getent $*" >>"$LOG"
dns=""
if [ "$1" = -s ]; then
  [ "$2" = dns ] || exit 2
  dns=1
  shift 2
fi
[ "$1" = hosts ] || exit 2
case "$2" in
  pi-launcher|pi-launcher.pi.default.svc.cluster.local) ;;
  *) exit 2 ;;
esac
if [ -n "$dns" ] && [ "$(grep -c '^getent -s dns' "$LOG")" -lt 3 ]; then
  exit 2
fi
echo "10.1.2.3 pi-launcher.pi.default.svc.cluster.local pi-launcher"
"""


def test_a_launcher_starts_its_command_only_once_its_own_name_resolves_through_dns(home: Path) -> None:
    """The workers' Hydra proxies call the launcher back by its hostname, through DNS; the launcher's own
    /etc/hosts knows that name from the start, so only a DNS answer says the workers can reach it."""
    bin_dir = home / "bin"
    bin_dir.mkdir()
    (bin_dir / "getent").write_text(FAKE_GETENT)
    (bin_dir / "hostname").write_text("#!/bin/sh\necho pi-launcher\n")
    for stub in bin_dir.iterdir():
        stub.chmod(0o755)
    log = home / "log"
    subprocess.run(
        ["sh", str(ENTRYPOINT), "sh", "-c", 'echo started >>"$LOG"'],
        env={
            "PATH": f"{bin_dir}:/usr/bin:/bin",
            "HOME": str(home / "nonexistent"),
            "LOG": str(log),
            "K_MPI_JOB_ROLE": "launcher",
        },
        check=True,
        timeout=60,
    )
    lines = log.read_text().splitlines()
    assert lines[-1] == "started", lines
    dns_answers = [
        i for i, line in enumerate(lines) if line.startswith("getent -s dns hosts pi-launcher.pi.default")
    ]
    # The third DNS lookup of the launcher's full name is the first that answers; the command comes after.
    assert len(dns_answers) >= 3, lines
    assert dns_answers[2] < lines.index("started"), lines
