"""The wheels of the torch images: fetched once into the cache, then handed to the build offline."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from mpioperator.testing.images import catalog, wheelhouse
from mpioperator.testing.images.versions import REPO_ROOT


@pytest.fixture(autouse=True)
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("MPIOPERATOR_CACHE", str(tmp_path / "cache"))
    return tmp_path / "cache"


def test_the_build_gets_the_wheels_and_an_offline_pip_conf_keeping_the_hosts_settings(tmp_path: Path) -> None:
    trust = tmp_path / "hostca"
    trust.mkdir()
    (trust / "pip.conf").write_text("[global]\ncert = /run/hostca/ca.crt\n")
    volumes = [f"{trust}:/run/hostca:ro", f"{trust / 'pip.conf'}:/etc/pip.conf:ro"]

    out = wheelhouse.offline_volumes(volumes, tmp_path)

    assert out == [
        f"{trust}:/run/hostca:ro",
        f"{tmp_path / 'pip-offline.conf'}:/etc/pip.conf:ro",
        f"{wheelhouse.wheels_dir()}:/wheels:ro",
    ]
    assert (tmp_path / "pip-offline.conf").read_text() == (
        "[global]\ncert = /run/hostca/ca.crt\nno-index = true\nfind-links = /wheels\n"
    )


def test_wheels_are_fetched_once_per_requirements_content(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    requirements = tmp_path / "requirements.txt"
    requirements.write_text("torch==2.15.0\n")
    commands: list[list[str]] = []

    def run(command: list[str], **_: object) -> subprocess.CompletedProcess[str]:
        commands.append(command)
        return subprocess.CompletedProcess(command, 0)

    monkeypatch.setattr(subprocess, "run", run)
    log = tmp_path / "log"
    wheelhouse.ensure_wheels(requirements, log)
    wheelhouse.ensure_wheels(requirements, log)
    assert len(commands) == 1
    assert commands[0][:6] == [sys.executable, "-m", "pip", "download", "--no-deps", "-d"]

    requirements.write_text("torch==2.15.1\n")  # a new pin is a new download
    assert not wheelhouse.have_wheels(requirements)
    wheelhouse.ensure_wheels(requirements, log)
    assert len(commands) == 2


def test_a_failed_download_is_not_remembered_as_done(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    requirements = tmp_path / "requirements.txt"
    requirements.write_text("torch==2.15.0\n")
    monkeypatch.setattr(subprocess, "run", lambda command, **_: subprocess.CompletedProcess(command, 1))
    with pytest.raises(RuntimeError, match="failed"):
        wheelhouse.ensure_wheels(requirements, tmp_path / "log")
    assert not wheelhouse.have_wheels(requirements)


def test_the_torch_images_pin_every_package_they_install() -> None:
    for image in (catalog.by_name(catalog.PYTORCH), catalog.by_name(catalog.DEEPSPEED)):
        assert image.wheels
        lines = [
            line.strip()
            for line in (REPO_ROOT / image.wheels).read_text().splitlines()
            if line.strip() and not line.startswith("#")
        ]
        assert lines and all("==" in line for line in lines), lines
        assert "--no-deps -r" in image.dockerfile_path.read_text()
