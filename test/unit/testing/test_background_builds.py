"""Waiting for the builds hack/test.sh runs in the background (the images, the tools): done, failed (with
its log's tail), or none to wait for; the tools' paths taken into the environment once built."""

from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from mpioperator.testing import background
from mpioperator.testing.wait import WaitTimeout

TOOL_VARIABLES = ("HELM_BIN", "PROMETHEUS_BIN", "SCHEDULER_PLUGINS_BIN", "VOLCANO_SCHEDULER_BIN", "KUEUE_BIN")


@pytest.fixture
def tool_build(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The tool build's directory, named to this process as hack/test.sh names it; no tool variable set."""
    monkeypatch.setenv(background.TOOLS.env, str(tmp_path))
    for name in TOOL_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    return tmp_path


@contextlib.contextmanager
def written_later(path: Path, text: str) -> Iterator[None]:
    """`text` written to `path` half a second into the block, as the build would while a test waits."""
    writer = threading.Timer(0.5, lambda: path.write_text(text))
    writer.start()
    try:
        yield
    finally:
        writer.cancel()


def test_without_a_background_build_there_is_nothing_to_wait_for(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(background.IMAGES.env, raising=False)
    assert background.IMAGES.wait(timeout=0.1) is None


def test_waits_until_the_build_writes_its_status_and_returns_when_it_succeeded(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(background.IMAGES.env, str(tmp_path))
    with written_later(tmp_path / "status", "0\n"):
        assert background.IMAGES.wait(timeout=60) == tmp_path
    assert (tmp_path / "status").read_text() == "0\n"


def test_a_failed_build_fails_the_wait_with_its_exit_code_and_the_end_of_its_log(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(background.IMAGES.env, str(tmp_path))
    (tmp_path / "log").write_text("".join(f"line {i}\n" for i in range(100)) + "error: buildah bud failed\n")
    (tmp_path / "status").write_text("2\n")
    with pytest.raises(background.BackgroundBuildFailed) as failed:
        background.IMAGES.wait(timeout=5)
    message = str(failed.value)
    assert "exit 2" in message and "hack/build-images.sh" in message
    assert "error: buildah bud failed" in message
    assert "line 99" in message and "line 10\n" not in message


def test_a_build_that_never_finishes_times_out(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(background.IMAGES.env, str(tmp_path))
    with pytest.raises(WaitTimeout, match="image build"):
        background.IMAGES.wait(timeout=0.5)


def test_the_built_tools_paths_go_into_the_environment_once_the_tool_build_ends(
    tool_build: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("KUEUE_BIN", "/opt/kueue-of-the-caller")
    (tool_build / "env").write_text("HELM_BIN=/cache/helm\nKUEUE_BIN=/cache/kueue\n")
    with written_later(tool_build / "status", "0\n"):
        taken = background.export_built_tools(timeout=60)
    assert taken == {"HELM_BIN": "/cache/helm"}
    assert os.environ["HELM_BIN"] == "/cache/helm"
    assert os.environ["KUEUE_BIN"] == "/opt/kueue-of-the-caller"


def test_a_failed_tool_build_names_its_script_and_takes_no_tool(tool_build: Path) -> None:
    (tool_build / "env").write_text("HELM_BIN=/cache/helm\n")
    (tool_build / "log").write_text("hack/build-prometheus.sh failed with exit 1\n")
    (tool_build / "status").write_text("1\n")
    with pytest.raises(background.BackgroundBuildFailed, match=r"hack/build-tools\.sh\) failed with exit 1"):
        background.export_built_tools(timeout=5)
    assert "HELM_BIN" not in os.environ


def test_a_test_waiting_for_one_tool_goes_on_once_that_tool_is_built_while_the_rest_still_build(
    tool_build: Path,
) -> None:
    (tool_build / "env").write_text("")
    assert background.tools_pending(["HELM_BIN"])
    with written_later(tool_build / "env", "HELM_BIN=/cache/helm\n"):
        taken = background.export_built_tools(["HELM_BIN"], timeout=60)
    assert taken == {"HELM_BIN": "/cache/helm"}
    assert not (tool_build / "status").exists()
    assert background.tools_pending(["PROMETHEUS_BIN"]) and background.tools_pending()


def test_a_tool_built_before_the_build_failed_is_still_given_to_the_tests_that_need_only_it(
    tool_build: Path,
) -> None:
    (tool_build / "env").write_text("HELM_BIN=/cache/helm\n")
    (tool_build / "status").write_text("1\n")
    assert background.export_built_tools(["HELM_BIN"], timeout=5) == {"HELM_BIN": "/cache/helm"}
    with pytest.raises(background.BackgroundBuildFailed):
        background.export_built_tools(["KUEUE_BIN"], timeout=5)
