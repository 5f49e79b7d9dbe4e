"""The real tier: one real node (containerd, CNI bridge, CoreDNS, kubelet) next to the full control plane,
shared by the session; images come from the local registry that stands in for docker.io.

A machine that cannot run a node (not root, not Linux) skips these tests with the reason; this one never
does. After the session the host must be exactly as before: the fixture compares a snapshot of processes,
mounts, interfaces, network namespaces, iptables rules and cgroups taken before the node started.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Collection, Iterator
from pathlib import Path
from typing import Any

import pytest

from mpioperator.testing.background import IMAGES, BackgroundBuildFailed
from mpioperator.testing.cluster import LocalCluster
from mpioperator.testing.components import NodeLifecycle
from mpioperator.testing.install import OPERATOR_NAMESPACE, install_manifests
from mpioperator.testing.node import slot
from mpioperator.testing.node.realnode import host_problem
from mpioperator.testing.node.settings import NodeNetwork
from mpioperator.testing.node.snapshot import HostSnapshot
from mpioperator.testing.operator import OperatorProcess
from mpioperator.testing.wait import WaitTimeout, wait_for
from test.conftest import _start


def require_real_node() -> None:
    problem = host_problem()
    if problem:
        pytest.skip(f"REAL-NODE TESTS NOT RUN on this machine: {problem}")


@pytest.fixture(scope="session")
def real_cluster() -> Iterator[LocalCluster]:
    require_real_node()
    # hack/test.sh builds the images while the first tiers run; the node pushes them at its start.
    failure = ""
    try:
        IMAGES.wait()
    except BackgroundBuildFailed as error:
        failure = str(error)
    if failure:
        pytest.fail(failure, pytrace=False)
    network = NodeNetwork.from_env()
    # The slot is held from the first snapshot to the last, so a run waiting for this bridge cannot start
    # its node in between and have its bridge, rules and cgroups counted as ours.
    with slot.holding(network.tag):
        before = HostSnapshot.take(network)
        cluster = _start(LocalCluster("real", nodes=0, node_network=network))
        assert cluster.layout is not None
        work_dir = cluster.layout.root
        install_manifests(cluster)
        yield cluster
        cluster.stop()
        left = HostSnapshot.take(network).left_since(before, work_dir)
    assert not left, f"the real node left this behind on the host: {left}"


def namespace_on_ready_nodes(
    cluster: LocalCluster, make_namespace: Any, settled: Callable[[], bool] | None = None
) -> str:
    """A new namespace, once every real node of the cluster is Ready (a node an earlier test lost may still
    be coming back) and `settled` holds, with its default ServiceAccount there to run pods."""
    assert cluster.real_nodes is not None
    names = [node.name for node in cluster.real_nodes.nodes]
    wait_for(lambda: all(cluster.node_is_ready(n) for n in names), timeout=90, what=f"{names} Ready")
    if settled is not None:
        wait_for(settled, timeout=120, what="no pod of an earlier test on the nodes")
    name: str = make_namespace(cluster)
    wait_for(
        lambda: cluster.rest.get(f"/api/v1/namespaces/{name}/serviceaccounts/default"),
        timeout=30,
        what=f"default ServiceAccount in {name}",
    )
    return name


@contextlib.contextmanager
def two_real_nodes(
    *,
    node_images: Collection[str],
    node_lifecycle: NodeLifecycle | None = None,
    scheduler_plugins: bool = False,
    workload_gang: bool = False,
) -> Iterator[LocalCluster]:
    """A cluster of its own with two real nodes, `real-node-b` and `real-node-c`, on the bridges after the
    session's (`MPIOPERATOR_NODE_BRIDGE` + `b` and `c`, the next two subnets), so it never waits for the
    session's node; the operator's manifests applied. On exit it checks that neither node left anything
    on the host. Modules that use it run one after the other, each waiting for the bridges' slots."""
    require_real_node()
    with contextlib.suppress(BackgroundBuildFailed):
        IMAGES.wait()
    base = NodeNetwork.from_env()
    networks = [base.sibling(1), base.sibling(2)]
    with contextlib.ExitStack() as slots:
        # Held from the first snapshot to the last, as the session's fixture holds its own.
        for network in networks:
            slots.enter_context(slot.holding(network.tag))
        before = [HostSnapshot.take(network) for network in networks]
        cluster = _start(
            LocalCluster(
                "real",
                nodes=0,
                node_network=base,
                real_nodes=2,
                first_real_node=1,
                node_lifecycle=node_lifecycle,
                node_images=node_images,
                scheduler_plugins=scheduler_plugins,
                workload_gang=workload_gang,
            )
        )
        assert cluster.layout is not None
        work_dir = cluster.layout.root
        install_manifests(cluster)
        yield cluster
        cluster.stop()

        def leftovers() -> dict[str, Any]:
            return {
                network.bridge: HostSnapshot.take(network).left_since(earlier, work_dir)
                for network, earlier in zip(networks, before, strict=True)
            }

        # A veth on no bridge is looked for on the whole host, so another developer's pod whose veth is
        # being made or torn down at this moment shows as one: what this cluster really left stays, what
        # was passing through goes.
        with contextlib.suppress(WaitTimeout):
            wait_for(lambda: not any(leftovers().values()), timeout=30, what="the host as it was")
        left = leftovers()
    assert not any(left.values()), f"the real nodes left this behind on the host: {left}"


@pytest.fixture
def real_operator(real_cluster: LocalCluster, tmp_path: Path) -> Iterator[OperatorProcess]:
    """The operator as a local process with the manifests' ServiceAccount, one per test: a test that needs
    other flags starts its own, and no two ever reconcile the same cluster."""
    with running_operator(real_cluster, tmp_path) as proc:
        yield proc


@contextlib.contextmanager
def running_operator(cluster: LocalCluster, tmp_path: Path, *flags: str) -> Iterator[OperatorProcess]:
    """The operator with the manifests' ServiceAccount and these extra flags, ready, stopped on exit."""
    proc = OperatorProcess(
        cluster, args=(f"--lock-namespace={OPERATOR_NAMESPACE}", *flags), workdir=tmp_path / "operator"
    )
    proc.start()
    try:
        proc.wait_ready(timeout=90)
        yield proc
    finally:
        proc.terminate()


@pytest.fixture
def log_reading_operator(real_cluster: LocalCluster, tmp_path: Path) -> Iterator[OperatorProcess]:
    """The operator reading opted-in launchers' logs every second instead of every 30 (mpioperator.io/progress,
    stall-timeout-seconds), so a job that trains for seconds shows its progress moving."""
    with running_operator(real_cluster, tmp_path, "--launcher-log-interval-seconds=1") as proc:
        yield proc
