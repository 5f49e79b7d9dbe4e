"""The tests that drive Helm, Prometheus, the gang schedulers or Kueue wait for hack/test.sh's background
tool build before they start, outside their timeout: on a cold machine the first tiers run while the tools
compile, and a test must not spend its own time limit waiting for a compiler.

Each test waits only for the tools of its place (USERS), before its first such test; their paths then go
into the environment, where the tests find each tool (mpioperator/testing/background.py). If the build
failed first, each such test fails with the end of its log instead of building the tool again itself."""

from __future__ import annotations

import os
from collections.abc import Generator
from pathlib import Path

import pytest

from mpioperator.testing import background
from mpioperator.testing.wait import WaitTimeout

# Where the tests that need the tools live, relative to test/, and which they need (None: every tool).
USERS: dict[tuple[str, ...], tuple[str, ...] | None] = {
    ("e2e",): None,
    ("integration", "charts"): ("HELM_BIN",),
    ("integration", "observability"): ("PROMETHEUS_BIN",),
    ("real", "test_real_helm_release.py"): ("HELM_BIN",),
    ("real", "test_real_gang.py"): ("SCHEDULER_PLUGINS_BIN",),
}
TEST_ROOT = Path(__file__).resolve().parent


class _Outcome:
    problems: dict[tuple[str, ...] | None, str] = {}


def tools_needed(path: Path) -> tuple[bool, tuple[str, ...] | None]:
    """Whether the tests in `path` use the built tools, and which (None: every tool)."""
    try:
        parts = path.relative_to(TEST_ROOT).parts
    except ValueError:
        return False, None
    for place, wanted in USERS.items():
        if parts[: len(place)] == place:
            return True, wanted
    return False, None


def _wait(config: pytest.Config, wanted: tuple[str, ...] | None) -> None:
    if wanted in _Outcome.problems:
        return
    reporter = config.pluginmanager.get_plugin("terminalreporter")
    capture = config.pluginmanager.get_plugin("capturemanager")
    if background.tools_pending(wanted) and reporter is not None and capture is not None:
        # Shown at once: a cold build can hold the run here for many minutes.
        with capture.global_and_fixture_disabled():
            tools = ", ".join(wanted) if wanted is not None else "every tool"
            log = f"{os.environ[background.TOOLS.env]}/log"
            reporter.write_line(f"waiting for the background tool build to make {tools} (log: {log})")
    _export(wanted)


def _export(wanted: tuple[str, ...] | None) -> None:
    try:
        background.export_built_tools(wanted)
    except (background.BackgroundBuildFailed, WaitTimeout) as error:
        _Outcome.problems[wanted] = str(error)


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_runtest_protocol(
    item: pytest.Item, nextitem: pytest.Item | None
) -> Generator[None, object, object]:
    # tryfirst makes this the outermost wrapper, so the wait comes before pytest-timeout starts its clock.
    needed, wanted = tools_needed(item.path)
    if needed:
        _wait(item.config, wanted)
    return (yield)


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> None:
    needed, wanted = tools_needed(item.path)
    if needed and wanted in _Outcome.problems:
        pytest.fail(_Outcome.problems[wanted], pytrace=False)
