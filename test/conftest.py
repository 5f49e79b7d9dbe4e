"""Shared fixtures: real local clusters per tier, a fresh namespace per test, component logs on failure."""

from __future__ import annotations

import contextlib
import re
import uuid
from collections.abc import Generator, Iterator

import pytest

from mpioperator.testing.cluster import LocalCluster, NamespaceFactory
from mpioperator.testing.process import spawned_pids, wait_pids_gone
from mpioperator.testing.rest import RestError
from mpioperator.testing.wait import wait_for

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
