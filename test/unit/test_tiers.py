"""Every collected test has exactly one tier: its directory's, or outside the tier directories one marker
of its own; anything else stops collection with the offending tests named."""

from __future__ import annotations

from pathlib import Path

import pytest

from test.conftest import TEST_ROOT, directory_tier

# The made-up trees below lie outside test/, so only the marker rule applies to them.
CONFTEST = "from test.conftest import pytest_collection_modifyitems  # noqa: F401\n"


def test_each_tier_directory_gives_its_files_that_tier() -> None:
    assert directory_tier(TEST_ROOT / "unit" / "controller" / "test_enqueue.py") == "unit"
    assert directory_tier(TEST_ROOT / "integration" / "test_local_apiserver.py") == "integration"
    assert directory_tier(TEST_ROOT / "e2e" / "test_chaos.py") == "e2e"
    assert directory_tier(TEST_ROOT / "real" / "test_real_mpijobs.py") == "real"


def test_files_outside_the_tier_directories_get_no_tier_from_their_place() -> None:
    assert directory_tier(TEST_ROOT / "benchmarks" / "scale.py") is None
    assert directory_tier(TEST_ROOT / "conftest.py") is None
    assert directory_tier(Path("/elsewhere/unit/test_x.py")) is None


UNTIERED = "def test_untiered():\n    pass\n"
TWO_TIERS = "import pytest\n\npytestmark = pytest.mark.unit\n\n\n@pytest.mark.integration\ndef test_twice():\n    pass\n"
ONE_TIER = "import pytest\n\n\n@pytest.mark.e2e\ndef test_once():\n    pass\n"


def collect(pytester: pytest.Pytester, **files: str) -> pytest.RunResult:
    pytester.makeconftest(CONFTEST)
    pytester.makepyfile(**files)
    return pytester.runpytest("--collect-only", "-q", "-p", "no:asyncio", "-p", "no:cacheprovider")


def test_collection_stops_and_names_each_test_without_exactly_one_tier(pytester: pytest.Pytester) -> None:
    result = collect(pytester, test_plain=UNTIERED, test_both=TWO_TIERS, test_marked=ONE_TIER)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        [
            "*every test needs exactly one tier*",
            "*test_both.py::test_twice: integration, unit",
            "*test_plain.py::test_untiered: no tier",
        ]
    )
    assert "test_marked" not in result.stderr.str()


def test_one_tier_marker_outside_the_tier_directories_is_accepted(pytester: pytest.Pytester) -> None:
    result = collect(pytester, test_marked=ONE_TIER)
    assert result.ret == pytest.ExitCode.OK
    result.stdout.fnmatch_lines(["test_marked.py::test_once"])


def test_every_test_file_of_the_repository_lies_in_a_tier_directory() -> None:
    """hack/test.sh runs the whole suite as two pytest runs over the four tier directories (e2e and
    integration, unit and real): a test file anywhere else under test/ would be run by neither."""
    files = [path for pattern in ("test_*.py", "*_test.py") for path in TEST_ROOT.rglob(pattern)]
    assert files
    assert [str(path) for path in files if directory_tier(path) is None] == []
