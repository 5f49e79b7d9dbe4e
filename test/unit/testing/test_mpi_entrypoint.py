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
