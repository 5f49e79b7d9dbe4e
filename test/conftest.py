"""Shared fixtures: real local clusters per tier, a fresh namespace per test, component logs on failure.

A test's tier is its directory (test/unit, test/integration, test/e2e, test/real): the marker is added
here, so `-m unit` can never miss a file that forgot its `pytestmark`, and a test must end up with exactly
one tier or collection stops. A test that leaves asyncio tasks pending fails (test/leaked_tasks.py).
"""

from __future__ import annotations

import contextlib
import re
import uuid
from collections.abc import Generator, Iterator
from pathlib import Path

import pytest

from mpioperator.testing.cluster import LocalCluster, NamespaceFactory
from mpioperator.testing.process import spawned_pids, wait_pids_gone
from mpioperator.testing.rest import RestError
from mpioperator.testing.wait import wait_for

# pytester: the tier check's own tests run pytest on a made-up tree.
pytest_plugins = ["pytester", "test.leaked_tasks", "test.tier_report", "test.built_tools"]

TIERS = ("unit", "integration", "e2e", "real")
TEST_ROOT = Path(__file__).parent

_clusters: list[LocalCluster] = []


def _start(cluster: LocalCluster) -> LocalCluster:
    _clusters.append(cluster)
    cluster.start()
    return cluster


@pytest.fixture(scope="session")
def apiserver_cluster() -> Iterator[LocalCluster]:
    """etcd + kube-apiserver, shared by the session; tests isolate themselves by namespace."""
    cluster = _start(LocalCluster("apiserver"))
    yield cluster
    cluster.stop()


@pytest.fixture(scope="session")
def workload_api_cluster() -> Iterator[LocalCluster]:
    """etcd + kube-apiserver serving Kubernetes' Workload API (its gang-scheduling gates on)."""
    cluster = _start(LocalCluster("apiserver", workload_gang=True))
    yield cluster
    cluster.stop()


@pytest.fixture(scope="session")
def full_cluster() -> Iterator[LocalCluster]:
    """The full tier with 4 kwok nodes, shared by the session."""
    cluster = _start(LocalCluster("full", nodes=4))
    yield cluster
    cluster.stop()


@pytest.fixture
def make_namespace(request: pytest.FixtureRequest) -> Iterator[NamespaceFactory]:
    """Create a uniquely named namespace on a cluster; it is deleted after the test."""
    created: list[tuple[LocalCluster, str]] = []
    prefix = re.sub(r"[^a-z0-9-]+", "-", request.node.name.lower().replace("_", "-"))[:40].strip("-")

    def make(cluster: LocalCluster) -> str:
        name = f"{prefix}-{uuid.uuid4().hex[:6]}"
        cluster.rest.create("/api/v1/namespaces", {"metadata": {"name": name}})
        created.append((cluster, name))
        if cluster.tier == "full":
            # Pods are rejected until kube-controller-manager has made the namespace's default SA.
            wait_for(
                lambda: cluster.rest.get(f"/api/v1/namespaces/{name}/serviceaccounts/default"),
                timeout=30,
                what=f"default ServiceAccount in {name}",
            )
        return name

    yield make
    for cluster, name in created:
        if cluster.layout is None:
            continue
        with contextlib.suppress(RestError):
            cluster.rest.delete(f"/api/v1/namespaces/{name}")


def directory_tier(path: Path) -> str | None:
    """The tier a test file's place under test/ gives it, if it lies in a tier's directory."""
    try:
        top = path.relative_to(TEST_ROOT).parts[0]
    except (ValueError, IndexError):
        return None
    return top if top in TIERS else None


def tier_problems(items: list[pytest.Item]) -> list[str]:
    """Tests without exactly one tier marker, as 'node id: what is wrong' lines."""
    problems = []
    for item in items:
        tiers = [mark.name for mark in item.iter_markers() if mark.name in TIERS]
        if len(tiers) != 1:
            problems.append(f"{item.nodeid}: {', '.join(tiers) or 'no tier'}")
    return problems


# tryfirst: the markers must be on the items before `-m` deselects by them.
@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        tier = directory_tier(item.path)
        if tier is not None:
            item.add_marker(tier)
    problems = tier_problems(items)
    if problems:
        raise pytest.UsageError(
            "every test needs exactly one tier marker, given by its directory under test/ "
            f"({', '.join(TIERS)}) or, outside those, by one pytest.mark; a tier directory's files "
            "carry none of their own:\n  " + "\n  ".join(problems)
        )


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    report = yield
    if report.failed and call.when in ("setup", "call"):
        for cluster in _clusters:
            tail = cluster.logs_tail()
            if tail:
                report.sections.append((f"local cluster ({cluster.tier}) component logs", tail))
    return report


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """Fail the run if any control-plane process outlived its cluster's teardown."""
    for cluster in _clusters:
        cluster.stop()
    leftovers = wait_pids_gone(spawned_pids(), timeout=15)
    if leftovers:
        session.config.stash[_LEFTOVERS] = leftovers
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


_LEFTOVERS = pytest.StashKey[list[int]]()


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter, config: pytest.Config) -> None:
    leftovers = config.stash.get(_LEFTOVERS, [])
    if leftovers:
        terminalreporter.write_line(
            f"ERROR: control-plane processes left running after teardown: {leftovers}", red=True
        )
