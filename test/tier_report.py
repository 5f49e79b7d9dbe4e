"""Skips that CI does not accept, and an account per tier in the last lines of the run.

A test that cannot run on this machine (the real tier without root, say) skips with its reason, so a
developer without root can still run the suite. Under CI (CI=true) or with --require-all-tiers such a skip
fails the test instead: a green CI run means every tier ran. Either way the lines just before pytest's own
closing line say, per tier, how many tests ran, passed and failed, and how many skipped for which reason.
Tests deselected with -m or -k never run and are no skips: they are not counted.
"""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Generator
from dataclasses import dataclass, field

import pytest

from test.conftest import TIERS, directory_tier

REQUIRE_ALL_TIERS = "--require-all-tiers"
# A file skipped as a whole outside the tier directories: its tests' markers were never read.
NO_TIER = "unknown"


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        REQUIRE_ALL_TIERS,
        action="store_true",
        help="a test that would skip fails instead, so that every tier must run (implied by CI=true)",
    )


def all_tiers_required(config: pytest.Config) -> bool:
    return bool(config.getoption(REQUIRE_ALL_TIERS)) or os.environ.get("CI") in ("true", "1")


def not_run_message(tier: str, reason: str) -> str:
    return (
        f"{tier} tier did not run: {reason} -- CI requires every tier to run "
        f"(CI=true or {REQUIRE_ALL_TIERS}); elsewhere this test would be skipped"
    )


@dataclass
class _Account:
    tiers: dict[str, str] = field(default_factory=dict)  # node id -> tier, for every collected test
    # Node id -> skip reason, for the tests whose skip was turned into a failure.
    not_run: dict[str, str] = field(default_factory=dict)


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
            line += f", {self.not_run.total()} did not run and failed (CI requires every tier to run)"
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
    return result
