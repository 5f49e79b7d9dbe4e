"""Skips and expected failures that CI does not accept, a floor of tests per tier, and an account per tier
in the last lines of the run.

A test that cannot run on this machine (the real tier without root, say) skips with its reason, so a
developer without root can still run the suite. Under CI (any non-empty CI but `false` or `0`) or with
--require-all-tiers such a skip fails the test instead, however it was raised (pytest.skip, a skipif
marker, unittest.SkipTest, a unittest skip decorator), and so does a test marked or declared xfail: a
green CI run means every test of every tier ran and passed.

Also under the requirement, each tier that the run was given whole (its directory or one above it, with
nothing of it deselected) must have run at least its floor of tests (`tier_floors` in setup.cfg): a tier
that collects far fewer tests than it should (a directory no longer collected, say) fails the run. A floor
far below what ran (under FLOOR_KEEPS_UP of it) fails the run too, naming the floor to set, so the floors
follow the suite as it grows.

Either way the lines just before pytest's own closing line say, per tier, how many tests ran, passed and
failed, and how many skipped for which reason. Tests deselected with -m or -k never run and are no skips:
they are not counted.
"""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Generator
from dataclasses import dataclass, field

import pytest

from test.conftest import TIERS, directory_tier

REQUIRE_ALL_TIERS = "--require-all-tiers"
FLOORS_INI = "tier_floors"
# A floor under this share of the tests that ran is out of date: the run fails, naming the floor to set.
FLOOR_KEEPS_UP = 0.6
# The floor it names: this share of what ran, well under it so that a few tests fewer do not fail CI.
FLOOR_SHARE = 0.85
# A file skipped as a whole outside the tier directories: its tests' markers were never read.
NO_TIER = "unknown"
# CI's values that say "not CI"; any other non-empty value is CI (the services set true, 1, yes, ...).
NOT_CI = ("", "false", "0")
REQUIRED = f"CI requires every tier to run (CI set or {REQUIRE_ALL_TIERS})"


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        REQUIRE_ALL_TIERS,
        action="store_true",
        help="a test that would skip or is expected to fail fails instead, so that every tier must run "
        "and pass, and each tier run whole must reach its floor (implied by CI set, but to false or 0)",
    )
    parser.addini(
        FLOORS_INI,
        type="linelist",
        help="'tier count' lines: the fewest tests a tier run whole may run when all tiers are required",
    )


def is_ci(value: str | None) -> bool:
    return (value or "").lower() not in NOT_CI


def all_tiers_required(config: pytest.Config) -> bool:
    return bool(config.getoption(REQUIRE_ALL_TIERS)) or is_ci(os.environ.get("CI"))


def not_run_message(tier: str, reason: str) -> str:
    return f"{tier} tier did not run: {reason} -- {REQUIRED}; elsewhere this test would be skipped"


def expected_failure_message(tier: str, reason: str) -> str:
    return (
        f"{tier} tier has a test expected to fail: {reason} -- {REQUIRED} and pass; elsewhere this "
        "would be an xfail"
    )


@dataclass
class _Account:
    tiers: dict[str, str] = field(default_factory=dict)  # node id -> tier, for every collected test
    # Node id -> skip reason, for the tests whose skip (or xfail) was turned into a failure.
    not_run: dict[str, str] = field(default_factory=dict)
    deselected: set[str] = field(default_factory=set)  # tiers some of whose tests were deselected
    floors: list[str] = field(default_factory=list)  # why the floors failed the run, one line each


_ACCOUNT = pytest.StashKey[_Account]()


def _account(config: pytest.Config) -> _Account:
    return config.stash.setdefault(_ACCOUNT, _Account())


def _tier(item: pytest.Item) -> str:
    return next((mark.name for mark in item.iter_markers() if mark.name in TIERS), NO_TIER)


# trylast: after the conftest has put each test's tier marker on it.
@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    _account(config).tiers.update((item.nodeid, _tier(item)) for item in items)


def _fail_skips(item: pytest.Item) -> Generator[None, None, None]:
    """Wraps each phase of a test: under the requirement a skip raised in it (pytest.skip, a skipif
    marker, a fixture that skips) becomes a failure that names the tier and the reason."""
    try:
        return (yield)
    except pytest.skip.Exception as skip:
        if not all_tiers_required(item.config):
            raise
        reason = skip.msg or "skipped without a reason"
        _account(item.config).not_run[item.nodeid] = reason
        # from None: the skip's own traceback says nothing the message does not.
        raise pytest.fail.Exception(not_run_message(_tier(item), reason), pytrace=False) from None


pytest_runtest_setup = pytest.hookimpl(wrapper=True)(_fail_skips)
pytest_runtest_call = pytest.hookimpl(wrapper=True)(_fail_skips)
pytest_runtest_teardown = pytest.hookimpl(wrapper=True)(_fail_skips)


# wrapper and tryfirst: outermost, so it sees the report once pytest's unittest support has made a
# unittest.SkipTest a skip and its skipping support has marked an xfail.
@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    """Under the requirement, what _fail_skips cannot see fails too: a skip that is no pytest.skip
    (unittest.SkipTest, a unittest.TestCase's skip) and a test expected to fail, whether it failed (xfail)
    or passed (xpass)."""
    report = yield
    if not all_tiers_required(item.config):
        return report
    if hasattr(report, "wasxfail"):
        reason = f"expected to fail: {report.wasxfail or 'no reason given'}"
        message = expected_failure_message(_tier(item), report.wasxfail or "no reason given")
        del report.wasxfail  # else pytest would still count it as an xfail or xpass
    elif report.skipped:
        reason = _skip_reason(report)
        message = not_run_message(_tier(item), reason)
    else:
        return report
    _account(item.config).not_run[item.nodeid] = reason
    report.outcome = "failed"
    report.longrepr = message
    return report


def pytest_deselected(items: list[pytest.Item]) -> None:
    """A tier some of whose tests were deselected (-m, -k, --deselect, --lf) did not run whole."""
    for item in items:
        tier = _tier(item)
        if tier == NO_TIER:
            tier = directory_tier(item.path) or NO_TIER
        _account(item.config).deselected.add(tier)


@pytest.hookimpl(wrapper=True)
def pytest_make_collect_report(
    collector: pytest.Collector,
) -> Generator[None, pytest.CollectReport, pytest.CollectReport]:
    """A file skipped as a whole (a module-level pytest.skip or importorskip) fails its collection under
    the requirement."""
    report = yield
    if report.skipped and all_tiers_required(collector.config):
        tier = directory_tier(collector.path) or NO_TIER
        reason = _skip_reason(report)
        _account(collector.config).not_run[report.nodeid] = reason
        report.outcome = "failed"
        report.longrepr = not_run_message(tier, reason)
    return report


def _skip_reason(report: pytest.TestReport | pytest.CollectReport) -> str:
    if hasattr(report, "wasxfail"):
        return f"expected to fail: {report.wasxfail}"
    if isinstance(report.longrepr, tuple):
        return report.longrepr[2].removeprefix("Skipped: ")
    return str(report.longrepr)


@dataclass
class _TierCount:
    passed: int = 0
    failed: int = 0
    skipped: Counter[str] = field(default_factory=Counter)
    not_run: Counter[str] = field(default_factory=Counter)

    def line(self, tier: str) -> str:
        ran = self.passed + self.failed
        line = f"{tier}: {ran} ran ({self.passed} passed, {self.failed} failed or errored)"
        if self.skipped:
            line += f", {self.skipped.total()} skipped"
        if self.not_run:
            line += f", {self.not_run.total()} failed for skipping or being expected to fail, as under CI"
        if not (ran or self.skipped or self.not_run):
            line = f"{tier}: no tests"
        reasons = (self.skipped + self.not_run).most_common()
        return "\n".join([line, *(f"  {count:>5} {reason}" for reason, count in reasons)])


def tier_counts(config: pytest.Config, stats: dict[str, list[object]]) -> dict[str, _TierCount]:
    """One outcome per test from its reports: a failure in any phase beats a skip, which beats a pass."""
    account = _account(config)
    reports: dict[str, list[pytest.TestReport | pytest.CollectReport]] = {}
    for entries in stats.values():
        for entry in entries:
            if isinstance(entry, pytest.TestReport | pytest.CollectReport):
                reports.setdefault(entry.nodeid, []).append(entry)
    counts = {tier: _TierCount() for tier in TIERS}
    for nodeid, test_reports in reports.items():
        tier = account.tiers.get(nodeid) or directory_tier(config.rootpath / nodeid.split("::")[0]) or NO_TIER
        count = counts.setdefault(tier, _TierCount())
        skips = [report for report in test_reports if report.skipped]
        if nodeid in account.not_run:
            count.not_run[account.not_run[nodeid]] += 1
        elif any(report.failed for report in test_reports):
            count.failed += 1
        elif skips:
            count.skipped[_skip_reason(skips[0])] += 1
        elif any(report.passed and report.when == "call" for report in test_reports):
            count.passed += 1
    return counts


def floors(config: pytest.Config) -> dict[str, int]:
    """The `tier_floors` ini lines, `tier count` each."""
    found = {}
    for line in config.getini(FLOORS_INI):
        tier, count = line.split()
        found[tier] = int(count)
    return found


def run_whole(config: pytest.Config, tier: str) -> bool:
    """The run was given the tier's directory (test/<tier> under the root) or one above it, and
    deselected none of its tests: it should have run every test of the tier."""
    if tier in _account(config).deselected:
        return False
    directory = config.rootpath / "test" / tier
    for arg in config.args:
        if "::" in arg:
            continue
        path = (config.invocation_params.dir / arg).resolve()
        if path == directory or path in directory.parents:
            return True
    return False


def floor_problems(config: pytest.Config, counts: dict[str, _TierCount]) -> list[str]:
    """Under the requirement, one line for each tier run whole whose count of tests that ran is under
    its floor, or so far over it that the floor no longer says anything."""
    if not all_tiers_required(config):
        return []
    problems = []
    for tier, floor in floors(config).items():
        if not run_whole(config, tier):
            continue
        count = counts.get(tier, _TierCount())
        ran = count.passed + count.failed
        if ran < floor:
            problems.append(
                f"{tier}: {ran} ran, under its floor of {floor} ({FLOORS_INI} in setup.cfg): tests of this "
                "tier were not collected or did not run"
            )
        elif floor < FLOOR_KEEPS_UP * ran:
            problems.append(
                f"{tier}: {ran} ran, its floor of {floor} is under {FLOOR_KEEPS_UP:.0%} of that: set it to "
                f"{int(FLOOR_SHARE * ran)} ({FLOORS_INI} in setup.cfg)"
            )
    return problems


def _terminal_counts(config: pytest.Config) -> dict[str, _TierCount] | None:
    reporter = config.pluginmanager.get_plugin("terminalreporter")
    return None if reporter is None else tier_counts(config, reporter.stats)


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """A tier under its floor (or a floor left far behind) fails a run that would otherwise pass."""
    counts = _terminal_counts(session.config)
    if counts is None:
        return
    problems = floor_problems(session.config, counts)
    _account(session.config).floors[:] = problems
    if problems and session.exitstatus == pytest.ExitCode.OK:
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


# wrapper and tryfirst: outermost, so these lines come after pytest's short test summary, just before its
# closing "N passed in Xs" line.
@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_terminal_summary(
    terminalreporter: pytest.TerminalReporter, config: pytest.Config
) -> Generator[None]:
    result = yield
    if config.option.collectonly:
        return result
    terminalreporter.write_sep("=", "tests per tier")
    for tier, count in tier_counts(config, terminalreporter.stats).items():
        terminalreporter.write_line(count.line(tier))
    for problem in _account(config).floors:
        terminalreporter.write_line(f"FAILED tier floor: {problem}", red=True)
    return result
