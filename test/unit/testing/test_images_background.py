"""Waiting for the image build hack/test.sh runs in the background: done, failed (with its log's tail), or
none to wait for."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from mpioperator.testing.images import background
from mpioperator.testing.wait import WaitTimeout


def test_without_a_background_build_there_is_nothing_to_wait_for(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(background.ENV, raising=False)
    background.wait_for_background_build(timeout=0.1)


def test_waits_until_the_build_writes_its_status_and_returns_when_it_succeeded(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(background.ENV, str(tmp_path))
    finish = threading.Timer(0.5, lambda: (tmp_path / "status").write_text("0\n"))
    finish.start()
    try:
        background.wait_for_background_build(timeout=60)
    finally:
        finish.cancel()
    assert (tmp_path / "status").read_text() == "0\n"


def test_a_failed_build_fails_the_wait_with_its_exit_code_and_the_end_of_its_log(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(background.ENV, str(tmp_path))
    (tmp_path / "log").write_text("".join(f"line {i}\n" for i in range(100)) + "error: buildah bud failed\n")
    (tmp_path / "status").write_text("2\n")
    with pytest.raises(background.BackgroundBuildFailed) as failed:
        background.wait_for_background_build(timeout=5)
    message = str(failed.value)
    assert "exit 2" in message
    assert "error: buildah bud failed" in message
    assert "line 99" in message and "line 10\n" not in message


def test_a_build_that_never_finishes_times_out(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(background.ENV, str(tmp_path))
    with pytest.raises(WaitTimeout, match="image build"):
        background.wait_for_background_build(timeout=0.5)
