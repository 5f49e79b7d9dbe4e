"""Under CI (CI set, but not to false or 0) or --require-all-tiers a test that would skip or is expected
to fail fails, naming its tier and the reason, and a tier run whole must reach its floor; elsewhere a skip
stays a skip; the last lines before pytest's closing line count each tier's tests."""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

import pytest

from test.conftest import TIERS
from test.tier_report import floors, is_ci

ROOT = Path(__file__).resolve().parents[2]
CONFTEST = (
    "from test.conftest import pytest_collection_modifyitems  # noqa: F401\n"
    'pytest_plugins = ["test.tier_report"]\n'
)
# Registered, so that pytest's closing line carries no warnings about unknown marks.
INI = "[pytest]\nmarkers =\n    unit\n    integration\n    e2e\n    real\n"

CANNOT_RUN_HERE = """
import pytest

@pytest.fixture(scope="session")
def node():
    pytest.skip("no root here")

@pytest.mark.real
def test_on_the_node(node):
    pass

@pytest.mark.real
def test_also_on_the_node(node):
    pass

@pytest.mark.integration
@pytest.mark.skipif(True, reason="containerd is not installed")
def test_with_containerd():
    pass

@pytest.mark.unit
def test_runs_anywhere():
    pass
"""


def run(pytester: pytest.Pytester, *args: str, **files: str) -> pytest.RunResult:
    pytester.makeconftest(CONFTEST)
    pytester.makeini(INI)
    pytester.makepyfile(**files)
    return pytester.runpytest("-p", "no:cacheprovider", *args)


@pytest.fixture(autouse=True)
def isolated_runs(monkeypatch: pytest.MonkeyPatch) -> None:
    """The runs below happen in this process: whether this suite itself runs under CI must not matter.
    Installed plugins stay out of them; only the one under test is loaded."""
    monkeypatch.delenv("CI", raising=False)
    monkeypatch.setenv("PYTEST_DISABLE_PLUGIN_AUTOLOAD", "1")


@pytest.mark.parametrize(
    ("args", "ci"), [(("--require-all-tiers",), None), ((), "true")], ids=["option", "CI=true"]
)
def test_a_skip_fails_the_run_naming_tier_and_reason_when_all_tiers_are_required(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, args: tuple[str, ...], ci: str | None
) -> None:
    if ci is not None:
        monkeypatch.setenv("CI", ci)
    result = run(pytester, *args, test_tiers=CANNOT_RUN_HERE)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.assert_outcomes(passed=1, errors=3)
    required = (
        "CI requires every tier to run (CI set or --require-all-tiers); elsewhere this test would be skipped"
    )
    # Each error's section carries the whole message; the short summary lines (cut to the terminal's width
    # outside CI) name the test.
    result.stdout.fnmatch_lines(
        [
            "*ERROR at setup of test_on_the_node*",
            f"real tier did not run: no root here -- {required}",
            "*ERROR at setup of test_also_on_the_node*",
            f"real tier did not run: no root here -- {required}",
            "*ERROR at setup of test_with_containerd*",
            f"integration tier did not run: containerd is not installed -- {required}",
            "*short test summary info*",
            "ERROR test_tiers.py::test_on_the_node - Failed: *",
            "ERROR test_tiers.py::test_also_on_the_node - Failed: *",
            "ERROR test_tiers.py::test_with_containerd - Failed: *",
        ]
    )


def test_a_test_that_skips_in_its_body_fails_too_when_all_tiers_are_required(
    pytester: pytest.Pytester,
) -> None:
    body = "import pytest\n\n@pytest.mark.e2e\ndef test_gives_up():\n    pytest.skip('no cluster')\n"
    result = run(pytester, "--require-all-tiers", test_body=body)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        ["*_ test_gives_up _*", "e2e tier did not run: no cluster -- CI requires every tier to run*"]
    )


def test_a_file_skipped_as_a_whole_fails_its_collection_when_all_tiers_are_required(
    pytester: pytest.Pytester,
) -> None:
    whole = "import pytest\n\npytest.importorskip('no_such_module_anywhere')\n"
    result = run(pytester, "--require-all-tiers", test_whole=whole)
    assert result.ret == pytest.ExitCode.INTERRUPTED
    result.stdout.fnmatch_lines(["ERROR test_whole.py - unknown tier did not run: could not import*"])


def test_without_ci_or_the_option_a_test_that_cannot_run_stays_a_skip(pytester: pytest.Pytester) -> None:
    result = run(pytester, test_tiers=CANNOT_RUN_HERE)
    assert result.ret == pytest.ExitCode.OK
    result.assert_outcomes(passed=1, skipped=3)
    assert "did not run" not in result.stdout.str()


MIXED = """
import pytest

@pytest.fixture
def breaks_on_teardown():
    yield
    raise RuntimeError("teardown broke")

@pytest.mark.unit
@pytest.mark.parametrize("n", [1, 2])
def test_passes(n):
    pass

@pytest.mark.unit
def test_fails():
    assert False

@pytest.mark.integration
@pytest.mark.parametrize("n", [1, 2])
def test_without_containerd(n):
    pytest.skip("containerd is not installed")

@pytest.mark.integration
def test_without_a_ca_bundle():
    pytest.skip("the host has no CA bundle")

@pytest.mark.integration
def test_runs():
    pass

@pytest.mark.e2e
def test_passes_then_its_teardown_fails(breaks_on_teardown):
    pass
"""


def test_the_last_lines_count_each_tiers_tests_and_skip_reasons_before_pytests_closing_line(
    pytester: pytest.Pytester,
) -> None:
    result = run(pytester, "-ra", test_mixed=MIXED)
    result.assert_outcomes(passed=4, failed=1, errors=1, skipped=3)
    lines = result.stdout.lines
    assert "tests per tier" in lines[-8]
    # A test whose call passed and whose teardown failed is one test, failed, though pytest reports twice.
    assert lines[-7:-1] == [
        "unit: 3 ran (2 passed, 1 failed or errored)",
        "integration: 1 ran (1 passed, 0 failed or errored), 3 skipped",
        "      2 containerd is not installed",
        "      1 the host has no CA bundle",
        "e2e: 1 ran (0 passed, 1 failed or errored)",
        "real: no tests",
    ]
    assert re.fullmatch(r"=+ 1 failed, 4 passed, 3 skipped, 1 error in [0-9.]+s =+", lines[-1])


def test_tests_deselected_by_marker_or_keyword_are_not_skips_and_do_not_fail_the_run(
    pytester: pytest.Pytester,
) -> None:
    by_marker = run(pytester, "--require-all-tiers", "-m", "unit", test_tiers=CANNOT_RUN_HERE)
    by_keyword = pytester.runpytest("-p", "no:cacheprovider", "--require-all-tiers", "-k", "anywhere")
    for result in (by_marker, by_keyword):
        assert result.ret == pytest.ExitCode.OK
        result.assert_outcomes(passed=1, deselected=3)
        result.stdout.fnmatch_lines(
            [
                "unit: 1 ran (1 passed, 0 failed or errored)",
                "integration: no tests",
                "e2e: no tests",
                "real: no tests",
            ]
        )


def under_ci_in_hack_scripts(value: str) -> bool:
    """hack/lib.sh's under_ci, which hack/test.sh turns into --require-all-tiers, for CI=value."""
    script = f'source "{ROOT}/hack/lib.sh"; if under_ci; then echo ci; else echo not; fi'
    env = {**os.environ, "CI": value}
    out = subprocess.run(["bash", "-c", script], env=env, capture_output=True, text=True, check=True)
    return out.stdout.strip() == "ci"


@pytest.mark.parametrize("value", ["true", "1", "yes", "TRUE", "True", "on", "buildkite"])
def test_any_ci_value_but_false_or_0_requires_every_tier_here_and_in_hack_test_sh(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, value: str
) -> None:
    assert is_ci(value) and under_ci_in_hack_scripts(value)
    monkeypatch.setenv("CI", value)
    result = run(pytester, test_tiers=CANNOT_RUN_HERE)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.assert_outcomes(passed=1, errors=3)


@pytest.mark.parametrize("value", ["", "false", "0", "FALSE", "False"])
def test_ci_empty_false_or_0_is_no_ci_here_or_in_hack_test_sh(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, value: str
) -> None:
    assert not is_ci(value) and not under_ci_in_hack_scripts(value)
    monkeypatch.setenv("CI", value)
    result = run(pytester, test_tiers=CANNOT_RUN_HERE)
    assert result.ret == pytest.ExitCode.OK
    result.assert_outcomes(passed=1, skipped=3)


def test_ci_run_script_sets_ci_itself() -> None:
    """.ci/run is a CI run whatever the service sets (or leaves unset)."""
    lines = (ROOT / ".ci" / "run").read_text().splitlines()
    exported = lines.index("export CI=true")
    assert exported < lines.index("exec bash hack/test.sh")


EXPECTED_TO_FAIL = """
import pytest

@pytest.mark.unit
@pytest.mark.xfail(reason="known bug")
def test_marked_and_failing():
    assert False

@pytest.mark.unit
@pytest.mark.xfail(reason="fixed long ago")
def test_marked_and_passing():
    pass

@pytest.mark.unit
def test_declares_itself_failing():
    pytest.xfail("flaky here")
"""


def test_a_test_expected_to_fail_fails_the_run_whether_it_fails_or_passes_when_all_tiers_are_required(
    pytester: pytest.Pytester,
) -> None:
    result = run(pytester, "--require-all-tiers", test_xfail=EXPECTED_TO_FAIL)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.assert_outcomes(failed=3)
    required = "CI requires every tier to run (CI set or --require-all-tiers) and pass"
    result.stdout.fnmatch_lines(
        [
            "*_ test_marked_and_failing _*",
            f"unit tier has a test expected to fail: known bug -- {required}; elsewhere this would be an xfail",
            "*_ test_marked_and_passing _*",
            f"unit tier has a test expected to fail: fixed long ago -- {required}*",
            "*_ test_declares_itself_failing _*",
            f"unit tier has a test expected to fail: flaky here -- {required}*",
        ]
    )
    result.stdout.fnmatch_lines(
        ["unit: 0 ran (0 passed, 0 failed or errored), 3 failed for skipping or being expected to fail*"]
    )


def test_without_ci_or_the_option_a_test_expected_to_fail_stays_an_xfail(pytester: pytest.Pytester) -> None:
    result = run(pytester, test_xfail=EXPECTED_TO_FAIL)
    assert result.ret == pytest.ExitCode.OK
    result.assert_outcomes(xfailed=2, xpassed=1)


UNITTEST_SKIPS = """
import unittest

import pytest

@pytest.fixture
def no_gpu():
    raise unittest.SkipTest("no GPU in the fixture")

@pytest.mark.unit
def test_skips_in_its_body():
    raise unittest.SkipTest("no GPU in the body")

@pytest.mark.unit
def test_skips_in_a_fixture(no_gpu):
    pass

@pytest.mark.unit
class Cases(unittest.TestCase):
    @unittest.skip("no GPU by decorator")
    def test_decorated(self):
        pass

    def test_skips_itself(self):
        self.skipTest("no GPU by skipTest")
"""


def test_a_unittest_skip_fails_the_run_too_when_all_tiers_are_required(pytester: pytest.Pytester) -> None:
    result = run(pytester, "--require-all-tiers", test_unittest=UNITTEST_SKIPS)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.assert_outcomes(failed=3, errors=1)
    for reason in ("in the body", "in the fixture", "by decorator", "by skipTest"):
        result.stdout.fnmatch_lines([f"unit tier did not run: no GPU {reason} -- CI requires every tier*"])
    assert "skipped" not in result.stdout.lines[-1]


def test_without_ci_or_the_option_a_unittest_skip_stays_a_skip(pytester: pytest.Pytester) -> None:
    result = run(pytester, test_unittest=UNITTEST_SKIPS)
    assert result.ret == pytest.ExitCode.OK
    result.assert_outcomes(skipped=4)


TEN_UNIT_TESTS = """
import pytest

@pytest.mark.unit
@pytest.mark.parametrize("n", range(10))
def test_counts(n):
    pass
"""


def floors_run(pytester: pytest.Pytester, floor: int, *args: str) -> pytest.RunResult:
    """Ten unit tests in test/unit, run with a unit floor of `floor` and every tier required; `args`
    name what to run (test/unit when none)."""
    pytester.makeconftest(CONFTEST)
    pytester.makeini(f"{INI}tier_floors =\n    unit {floor}\n    e2e 1000\n")
    pytester.makepyfile(**{"test/unit/test_counts": TEN_UNIT_TESTS})
    return pytester.runpytest("-p", "no:cacheprovider", "--require-all-tiers", *(args or ("test/unit",)))


def test_a_tier_run_whole_that_runs_fewer_tests_than_its_floor_fails_the_run(
    pytester: pytest.Pytester,
) -> None:
    result = floors_run(pytester, 11)
    result.assert_outcomes(passed=10)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(
        [
            "unit: 10 ran (10 passed, 0 failed or errored)",
            "FAILED tier floor: unit: 10 ran, under its floor of 11 (tier_floors in setup.cfg): tests of "
            "this tier were not collected or did not run",
        ]
    )
    # test/e2e was not given, so its floor says nothing.
    assert "FAILED tier floor: e2e" not in result.stdout.str()


def test_a_tier_that_reaches_its_floor_passes(pytester: pytest.Pytester) -> None:
    result = floors_run(pytester, 10)
    assert result.ret == pytest.ExitCode.OK
    assert "tier floor" not in result.stdout.str()


@pytest.mark.parametrize(
    "args",
    [
        ("test/unit", "-k", "not counts[3]"),
        ("test/unit/test_counts.py",),
        ("test/unit/test_counts.py::test_counts",),
    ],
)
def test_a_tier_not_run_whole_has_no_floor(pytester: pytest.Pytester, args: tuple[str, ...]) -> None:
    result = floors_run(pytester, 11, *args)
    assert result.ret == pytest.ExitCode.OK
    assert "tier floor" not in result.stdout.str()


def test_a_floor_is_only_checked_when_all_tiers_are_required(pytester: pytest.Pytester) -> None:
    pytester.makeconftest(CONFTEST)
    pytester.makeini(f"{INI}tier_floors =\n    unit 11\n")
    pytester.makepyfile(**{"test/unit/test_counts": TEN_UNIT_TESTS})
    result = pytester.runpytest("-p", "no:cacheprovider", "test/unit")
    assert result.ret == pytest.ExitCode.OK


def test_a_floor_far_under_what_ran_fails_the_run_naming_the_floor_to_set(pytester: pytest.Pytester) -> None:
    result = floors_run(pytester, 5)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(
        ["FAILED tier floor: unit: 10 ran, its floor of 5 is under 60% of that: set it to 8 (tier_floors*"]
    )


def test_the_suite_has_a_floor_for_every_tier(pytestconfig: pytest.Config) -> None:
    assert set(floors(pytestconfig)) == set(TIERS)
    assert all(count > 0 for count in floors(pytestconfig).values())


def test_a_run_given_the_whole_tree_checks_every_tiers_floor(pytester: pytest.Pytester) -> None:
    """`pytest` alone runs every tier: a tier that ran nothing is under its floor."""
    result = floors_run(pytester, 10, ".")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(["FAILED tier floor: e2e: 0 ran, under its floor of 1000*"])
    assert "FAILED tier floor: unit" not in result.stdout.str()
