"""Under CI (CI=true) or --require-all-tiers a test that would skip fails, naming its tier and the reason;
elsewhere it stays a skip; the last lines before pytest's closing line count each tier's tests."""

from __future__ import annotations

import re

import pytest

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
        "CI requires every tier to run (CI=true or --require-all-tiers); elsewhere this test would be skipped"
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
