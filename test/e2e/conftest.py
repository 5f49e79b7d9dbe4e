"""The operator installed as users install it: manifests applied with kubectl, the process run with the
manifests' ServiceAccount token (kwok runs no containers, so the Deployment is scaled to zero and the
same command runs here as a local process instead).

Gang-scheduling tests get their own cluster, with the scheduler-plugins scheduler next to the vanilla one,
and their own operator started with --gang-scheduling: two operators on one cluster would fight over the
same MPIJobs."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from mpioperator.testing import kueue
from mpioperator.testing.cluster import LocalCluster
from mpioperator.testing.install import OPERATOR_NAMESPACE, REPO, install_manifests
from mpioperator.testing.operator import OperatorProcess
from test.conftest import _start


@pytest.fixture(scope="session")
def installed_cluster(full_cluster: LocalCluster) -> LocalCluster:
    install_manifests(full_cluster)
    return full_cluster


def _installed_cluster(
    *, scheduler_plugins: bool = False, volcano: bool = False, workload_gang: bool = False
) -> Iterator[LocalCluster]:
    """A full-tier cluster of its own, without nodes (its tests add their own), with the operator's
    manifests applied; stopped at the end."""
    cluster = _start(
        LocalCluster(
            "full", nodes=0, scheduler_plugins=scheduler_plugins, volcano=volcano, workload_gang=workload_gang
        )
    )
    install_manifests(cluster)
    yield cluster
    cluster.stop()


def _run_operator(
    cluster: LocalCluster, tmp_path_factory: pytest.TempPathFactory, *extra_args: str
) -> Iterator[OperatorProcess]:
    proc = OperatorProcess(
        cluster,
        args=(
            f"--lock-namespace={OPERATOR_NAMESPACE}",
            "--threadiness=4",
            "--kube-api-qps=100",
            "--kube-api-burst=200",
            # Per-object debug: each sync logs its key, which tests read as the sign a job was synced.
            "--v=4",
            # One operator serves every module of its cluster for the whole session, with no Deployment
            # to start it again: with upstream's 5 s renew deadline a loaded 2-core machine can starve one
            # renewal, and a replica that loses its Lease exits, failing every later test of that cluster.
            # Handover at upstream's timings is what test_operator_ha and test_chaos test, with their own.
            "--leader-elect-lease-duration=60",
            "--leader-elect-renew-deadline=40",
            "--leader-elect-retry-period=3",
            *extra_args,
        ),
        workdir=tmp_path_factory.mktemp("operator"),
    )
    proc.start()
    proc.wait_ready(timeout=90)
    yield proc
    proc.terminate()


@pytest.fixture(scope="session")
def operator(
    installed_cluster: LocalCluster, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[OperatorProcess]:
    """One operator replica for the session, leader-elected like in production."""
    yield from _run_operator(installed_cluster, tmp_path_factory)


@pytest.fixture(scope="session")
def gang_cluster() -> Iterator[LocalCluster]:
    """The full tier plus scheduler-plugins (Coscheduling) and the operator's manifests, shared by the session.

    It starts without nodes: every gang test adds its own small labelled nodes, so that what fits is exact.
    """
    yield from _installed_cluster(scheduler_plugins=True)


@pytest.fixture(scope="session")
def gang_operator(
    gang_cluster: LocalCluster, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[OperatorProcess]:
    """The operator with gang scheduling on, its pods going to the scheduler-plugins scheduler."""
    yield from _run_operator(
        gang_cluster, tmp_path_factory, f"--gang-scheduling={gang_cluster.gang_scheduler_name}"
    )


@pytest.fixture(scope="session")
def volcano_cluster() -> Iterator[LocalCluster]:
    """The full tier plus Volcano's scheduler and CRDs, and the operator's manifests; nodes come per test."""
    yield from _installed_cluster(volcano=True)


@pytest.fixture(scope="session")
def volcano_operator(
    volcano_cluster: LocalCluster, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[OperatorProcess]:
    """The operator with --gang-scheduling=volcano: Volcano PodGroups, pods sent to the `volcano` scheduler."""
    yield from _run_operator(volcano_cluster, tmp_path_factory, "--gang-scheduling=volcano")


@pytest.fixture(scope="session")
def workload_gang_cluster() -> Iterator[LocalCluster]:
    """The full tier with Kubernetes' own gang scheduling (the Workload API, kube-scheduler's
    GangScheduling plugin) and the operator's manifests; nodes come per test."""
    yield from _installed_cluster(workload_gang=True)


@pytest.fixture(scope="session")
def workload_gang_operator(
    workload_gang_cluster: LocalCluster, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[OperatorProcess]:
    """The operator with --gang-scheduling=GangScheduling: Workloads and PodGroups, pods left to kube-scheduler."""
    yield from _run_operator(workload_gang_cluster, tmp_path_factory, "--gang-scheduling=GangScheduling")


@pytest.fixture(scope="session")
def kueue_cluster() -> Iterator[LocalCluster]:
    """The full tier (Kueue needs kube-controller-manager's garbage collector) and the operator's manifests,
    with no nodes: Kueue tests add their own labelled nodes. Kueue itself is the `kueue` fixture."""
    problem = kueue.host_problem()
    if problem:
        pytest.skip(f"KUEUE TESTS NOT RUN on this machine: {problem}")
    yield from _installed_cluster()


@pytest.fixture(scope="session")
def kueue_process(
    kueue_cluster: LocalCluster, tmp_path_factory: pytest.TempPathFactory, request: pytest.FixtureRequest
) -> kueue.Kueue:
    """Kueue beside the operator, its MPIJob integration on; its log stays in the session's tmp dir."""
    running = kueue.start(kueue_cluster, tmp_path_factory.mktemp("kueue"))
    reporter = request.config.pluginmanager.get_plugin("terminalreporter")
    capture = request.config.pluginmanager.get_plugin("capturemanager")
    if reporter is not None and capture is not None:
        # Shown at once, not only with a failure's captured output.
        with capture.global_and_fixture_disabled():
            reporter.write_line(f"Kueue log: {running.log_path}")
    return running


@pytest.fixture(scope="session")
def kueue_operator(
    kueue_cluster: LocalCluster, kueue_process: kueue.Kueue, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[OperatorProcess]:
    """The operator on the Kueue cluster, started once Kueue's webhooks are in place."""
    yield from _run_operator(kueue_cluster, tmp_path_factory)


@pytest.fixture(scope="session")
def exec_agent_cluster() -> Iterator[LocalCluster]:
    """The full tier with 2 kwok nodes and the exec-agent install (the standalone one with its component):
    a cluster of its own, since its operator runs with --exec-agent and would fight the session's."""
    cluster = _start(LocalCluster("full", nodes=2))
    install_manifests(cluster, REPO / "manifests" / "overlays" / "exec-agent")
    yield cluster
    cluster.stop()


@pytest.fixture(scope="session")
def exec_agent_operator(
    exec_agent_cluster: LocalCluster, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[OperatorProcess]:
    """The operator with --exec-agent, with the rights of the manifests and the exec-agent component."""
    yield from _run_operator(exec_agent_cluster, tmp_path_factory, "--exec-agent")
