"""A cluster's real nodes, started and stopped together around the services they share.

Node i (from 0, or from `offset`) has the bridge and subnet `NodeNetwork.sibling(i)` of the cluster's
network (`mpiop0`, 10.88.0.0/16; then `mpiop0b`, 10.89.0.0/16, ...), the name `settings.node_name(i)`
and its files under `<cluster>/node` (`node-b`, ...). Every bridge has its address on the host, so the
host routes between the nodes' subnets: a pod on one node reaches a pod on another through its own
gateway, the host, and the other node's bridge, with no encapsulation and no NAT.
"""

from __future__ import annotations

import contextlib
from collections.abc import Collection
from pathlib import Path

from mpioperator.testing.node import host
from mpioperator.testing.node.realnode import RealNode
from mpioperator.testing.node.requirements import NodeUnavailable, host_problem
from mpioperator.testing.node.services import NodeServices
from mpioperator.testing.node.settings import SIBLING_LETTERS, NodeNetwork, node_name
from mpioperator.testing.plane import ControlPlane

# The services' files (the registry's config and log, the Corefile).
SERVICES_DIR = "node-services"


class RealNodes:
    def __init__(
        self,
        count: int = 1,
        *,
        network: NodeNetwork | None = None,
        images: Collection[str] | None = None,
        registry_storage: Path | None = None,
        lock_timeout: float = 900.0,
        lease_seconds: int = 40,
        offset: int = 0,
    ) -> None:
        if count < 1 or offset < 0 or offset + count > len(SIBLING_LETTERS) + 1:
            raise ValueError(f"a cluster has 1 to {len(SIBLING_LETTERS) + 1} real nodes, not {count}")
        base = network or NodeNetwork.from_env()
        # `offset`: a cluster started beside the one-node session cluster takes the siblings after its
        # bridge, so neither waits for the other's slot.
        self.nodes = [
            RealNode(
                network=base.sibling(i),
                name=node_name(i),
                directory="node" if i == 0 else f"node-{SIBLING_LETTERS[i - 1]}",
                component_suffix="" if i == 0 else node_name(i),
                lock_timeout=lock_timeout,
                lease_seconds=lease_seconds,
            )
            for i in range(offset, offset + count)
        ]
        self.services = NodeServices(registry_storage=registry_storage, images=images)
        self._root: Path | None = None

    @property
    def registry_address(self) -> str:
        return self.services.registry_address

    @property
    def images(self) -> list[str]:
        return self.services.images

    def by_name(self, name: str) -> RealNode:
        for node in self.nodes:
            if node.name == name:
                return node
        raise KeyError(name)

    def prepare(self, cluster_root: Path, pki_dir: Path) -> list[str]:
        """Lock every node's slot and write the certificates; returns the API server's extra flags."""
        problem = host_problem()
        if problem:
            raise NodeUnavailable(problem)
        self._root = cluster_root
        flags = self.services.prepare(pki_dir)
        assert self.services.ca is not None
        for node in self.nodes:
            node.prepare(cluster_root, self.services.ca)
        return flags

    def start(self, cluster: ControlPlane, binaries: Path) -> None:
        """Every bridge first (CoreDNS binds all their addresses), then the shared services, then each
        node's containerd and kubelet; returns once every node is Ready."""
        assert self._root is not None, "prepare() first"
        if len(self.nodes) > 1:
            host.enable_forwarding()
        before = host.iptables_snapshot()
        for node in self.nodes:
            node.claim_host(cluster, before)
        services_root = self._root / SERVICES_DIR
        services_root.mkdir(parents=True, exist_ok=True)
        self.services.start(
            cluster,
            services_root,
            addresses=[node.network.gateway for node in self.nodes],
            binaries=binaries,
        )
        for node in self.nodes:
            node.start(cluster, registry_address=self.registry_address, binaries=binaries)
        for node in self.nodes:
            node.wait_ready(cluster)

    def stop(self, cluster: ControlPlane | None = None) -> list[str]:
        """Drain every node while its kubelet runs (so sandboxes go through CNI DEL), stop every process,
        and only then sweep the host: no kubelet is left to remake the chains a sweep removes."""
        if cluster is not None:
            for node in self.nodes:
                # Teardown goes on whatever a drain meets; the sweep removes what it left.
                with contextlib.suppress(Exception):
                    node.drain(cluster)
        for node in self.nodes:
            node.stop_processes()
        self.services.stop()
        problems: list[str] = []
        for node in self.nodes:
            problems += node.sweep()
        return problems
