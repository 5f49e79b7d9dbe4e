"""One real node joined to a LocalCluster: containerd + runc + CNI bridge + CoreDNS + kubelet, with images
from a local registry that stands in for docker.io and registry.k8s.io.

Start-up is split around the API server: `prepare()` writes the certificates the API server must be started
with (the CA it trusts for client certificates, its own client certificate for kubelets), `start()` brings
the node up once the control plane runs. `stop()` drains the node and then sweeps the host (teardown.py).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import sys
import time
import urllib.request
from collections.abc import Collection
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from mpioperator.testing.cachedir import cache_dir
from mpioperator.testing.images.ensure import ensure_images
from mpioperator.testing.node import config, host, slot
from mpioperator.testing.node.settings import (
    KUBERNETES_SERVICE_IP,
    NODE_NAME,
    NodeLayout,
    NodeNetwork,
)
from mpioperator.testing.node.teardown import NodeState, sweep
from mpioperator.testing.pki import CertificateAuthority, Pair, write_cert_kubeconfig
from mpioperator.testing.ports import free_port, free_ports
from mpioperator.testing.process import ManagedProcess
from mpioperator.testing.registry import LocalRegistry
from mpioperator.testing.wait import wait_for

if TYPE_CHECKING:
    from mpioperator.testing.cluster import LocalCluster

REQUIRED_COMMANDS = {
    "containerd": "containerd",
    "runc": "runc",
    "iptables": "iptables",
    "ip": "iproute2",
    "ctr": "containerd",
}


class NodeUnavailable(RuntimeError):
    """This machine cannot run a real node; the message says why and what to do."""


def host_problem() -> str | None:
    """Why a real node cannot run here, in one line, or None."""
    if sys.platform != "linux":
        return "a real node needs Linux"
    if os.geteuid() != 0:
        return "a real node needs root (containerd, the kubelet and the CNI bridge change host networking)"
    missing = sorted({pkg for cmd, pkg in REQUIRED_COMMANDS.items() if shutil.which(cmd) is None})
    if not (config.CNI_BIN_DIR / "bridge").exists():
        missing.append("containernetworking-plugins")
    if missing:
        packages = " ".join(missing)
        return f"missing packages for a real node: apt-get install {packages} (or run hack/setup-node.sh)"
    if not host.cgroup_mounts():
        return "no cgroup hierarchy is mounted"
    return None


@dataclass(frozen=True)
class NodeCertificates:
    ca: Path
    apiserver_kubelet_client: Pair
    kubelet_client: Pair
    kubelet_serving: Pair


class RealNode:
    def __init__(
        self,
        *,
        network: NodeNetwork | None = None,
        node_name: str = NODE_NAME,
        registry_storage: Path | None = None,
        lock_timeout: float = 900.0,
        images: Collection[str] | None = None,
    ) -> None:
        self.network = network or NodeNetwork.from_env()
        self.name = node_name
        self._registry_storage = registry_storage
        self._lock_timeout = lock_timeout
        self._holds_slot = False
        self.layout: NodeLayout | None = None
        self.certs: NodeCertificates | None = None
        self.registry_address = ""
        self.kubelet_port = 0
        # The catalog images this node's registry gets (and their bases); None: the whole catalog.
        self._wanted_images = images
        self.images: list[str] = []
        self._procs: list[ManagedProcess] = []
        self._registry: LocalRegistry | None = None

    # -- before the API server ------------------------------------------------------------------------

    def prepare(self, cluster_root: Path, pki_dir: Path) -> list[str]:
        """Lock the host's node slot, write certificates; returns the API server's extra flags."""
        problem = host_problem()
        if problem:
            raise NodeUnavailable(problem)
        self._take_lock()
        self.layout = NodeLayout(cluster_root / "node")
        self.layout.root.mkdir(parents=True, exist_ok=True)
        ca = CertificateAuthority(pki_dir / "node-ca")
        gateway = self.network.gateway
        self.certs = NodeCertificates(
            ca=ca.cert,
            apiserver_kubelet_client=ca.issue(
                "apiserver-kubelet-client",
                common_name="kube-apiserver-kubelet-client",
                organizations=("system:masters",),
            ),
            kubelet_client=ca.issue(
                "kubelet-client", common_name=f"system:node:{self.name}", organizations=("system:nodes",)
            ),
            kubelet_serving=ca.issue(
                "kubelet-serving", common_name=self.name, ips=(gateway,), dns_names=(self.name,), server=True
            ),
        )
        return [
            # Pods reach the API server on the node's address (through the Service IP's DNAT rule).
            "--bind-address=0.0.0.0",
            f"--client-ca-file={ca.cert}",
            f"--kubelet-client-certificate={self.certs.apiserver_kubelet_client.cert}",
            f"--kubelet-client-key={self.certs.apiserver_kubelet_client.key}",
            f"--kubelet-certificate-authority={ca.cert}",
            # The node's name resolves nowhere; its InternalIP is the bridge address.
            "--kubelet-preferred-address-types=InternalIP,Hostname",
            "--enable-admission-plugins=NodeRestriction",
        ]

    # -- after the control plane ----------------------------------------------------------------------

    def start(self, cluster: LocalCluster, node_binaries: Path) -> None:
        layout, certs = self._prepared()
        state = NodeState(
            bridge=self.network.bridge,
            subnet=self.network.subnet,
            root=str(layout.root),
            containerd_socket=str(layout.containerd_socket),
            iptables_before=host.iptables_snapshot(),
        )
        # Leftovers of an earlier node on this slot (a run killed before its sweep) go first.
        sweep(state)
        state.write(layout.state_file)
        host.create_bridge(self.network)
        host.create_cgroup_root(self.network.tag)
        host.add_nat_rule(
            config.apiserver_dnat_rule(
                self.network, service_ip=KUBERNETES_SERVICE_IP, api_port=cluster.api_port
            )
        )
        self._start_registry(layout)
        self._start_containerd(cluster, layout)
        self._start_coredns(cluster, layout, node_binaries)
        self._start_kubelet(cluster, layout, certs, node_binaries)

    def _start_registry(self, layout: NodeLayout) -> None:
        """The images' registry, its storage kept between runs so a warm start pushes nothing."""
        self._registry = LocalRegistry(
            self._registry_storage or default_registry_storage(), work_dir=layout.root / "registry"
        )
        self._registry.start()
        self.registry_address = self._registry.address
        self.images = ensure_images(self.registry_address, self._wanted_images)

    def _start_containerd(self, cluster: LocalCluster, layout: NodeLayout) -> None:
        layout.containerd_config.write_text(config.containerd_config(layout))
        for name, text in config.registry_mirrors(self.registry_address).items():
            directory = layout.registry_hosts / name
            directory.mkdir(parents=True, exist_ok=True)
            (directory / "hosts.toml").write_text(text)
        layout.cni_conf_dir.mkdir(parents=True, exist_ok=True)
        (layout.cni_conf_dir / "10-mpioperator.conflist").write_text(
            config.dump_json(config.cni_conflist(self.network, layout))
        )
        proc = cluster.spawn_component("containerd", config.containerd_argv(layout))
        self._procs.append(proc)

        def serving() -> bool:
            cluster.require_running(proc)
            return layout.containerd_socket.exists()

        wait_for(serving, timeout=30, interval=0.1, what="containerd's socket")

    def _start_coredns(self, cluster: LocalCluster, layout: NodeLayout, binaries: Path) -> None:
        health_port, ready_port = free_ports(2)
        layout.corefile.write_text(
            config.corefile(
                self.network, kubeconfig=cluster.kubeconfig, health_port=health_port, ready_port=ready_port
            )
        )
        proc = cluster.spawn_component("coredns", config.coredns_argv(binaries / "coredns", layout))
        self._procs.append(proc)

        def ready() -> bool:
            cluster.require_running(proc)
            with urllib.request.urlopen(f"http://127.0.0.1:{ready_port}/ready", timeout=2) as response:
                return bool(response.status == 200)

        wait_for(ready, timeout=60, interval=0.2, what="CoreDNS /ready")

    def _start_kubelet(
        self, cluster: LocalCluster, layout: NodeLayout, certs: NodeCertificates, binaries: Path
    ) -> None:
        self.kubelet_port = free_port()
        write_cert_kubeconfig(
            layout.kubelet_kubeconfig,
            server=cluster.server,
            ca_file=cluster.ca_file,
            client=certs.kubelet_client,
        )
        kubelet = config.kubelet_config(
            self.network,
            layout,
            port=self.kubelet_port,
            client_ca=certs.ca,
            serving_cert=certs.kubelet_serving.cert,
            serving_key=certs.kubelet_serving.key,
            cgroup_root=f"/{self.network.tag}",
        )
        layout.kubelet_config.write_text(config.dump_json(kubelet))  # JSON is YAML
        layout.kubelet_root.mkdir(parents=True, exist_ok=True)
        proc = cluster.spawn_component(
            "kubelet", config.kubelet_argv(binaries / "kubelet", self.network, layout, node_name=self.name)
        )
        self._procs.append(proc)

        def ready() -> bool:
            cluster.require_running(proc)
            return cluster.node_is_ready(self.name)

        wait_for(ready, timeout=120, interval=0.5, what=f"real node {self.name} Ready")

    # -- teardown -------------------------------------------------------------------------------------

    def stop(self, cluster: LocalCluster | None = None) -> list[str]:
        """Drain the node while the kubelet still runs (so sandboxes go through CNI DEL), then stop every
        part and sweep the host; returns what could not be removed."""
        if self.layout is None:
            self._release_lock()
            return []
        if cluster is not None and any(p.running() for p in self._procs):
            with contextlib.suppress(Exception):
                self._drain(cluster)
        for proc in reversed(self._procs):
            proc.stop()
        self._procs.clear()
        if self._registry is not None:
            self._registry.stop()
            self._registry = None
        problems: list[str] = []
        if self.layout.state_file.exists():
            problems = sweep(NodeState.read(self.layout.state_file))
        self._release_lock()
        return problems

    def _drain(self, cluster: LocalCluster, timeout: float = 30.0) -> None:
        """Cordon (so controllers' replacement pods land nowhere), force-delete every pod, and wait until
        the kubelet has stopped their sandboxes (no shim of ours left)."""
        assert self.layout is not None
        cluster.rest.merge_patch(f"/api/v1/nodes/{self.name}", {"spec": {"unschedulable": True}})
        pods = cluster.rest.get(f"/api/v1/pods?fieldSelector=spec.nodeName={self.name}")["items"]
        for pod in pods:
            meta = pod["metadata"]
            with contextlib.suppress(Exception):
                cluster.rest.delete(
                    f"/api/v1/namespaces/{meta['namespace']}/pods/{meta['name']}?gracePeriodSeconds=0"
                )
        socket = str(self.layout.containerd_socket)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline and host.pids_with_argument(f"-address {socket}"):
            time.sleep(0.2)

    # -- the host's node slot -------------------------------------------------------------------------

    def _take_lock(self) -> None:
        """One node per bridge on a machine: a second run waits here instead of tearing the first down."""
        try:
            slot.acquire(self.network.tag, self._lock_timeout)
        except slot.SlotBusy as busy:
            raise NodeUnavailable(str(busy)) from None
        self._holds_slot = True

    def _release_lock(self) -> None:
        if self._holds_slot:
            self._holds_slot = False
            slot.release(self.network.tag)

    def _prepared(self) -> tuple[NodeLayout, NodeCertificates]:
        if self.layout is None or self.certs is None:
            raise NodeUnavailable("RealNode.prepare() was not called before start()")
        return self.layout, self.certs


def default_registry_storage() -> Path:
    """Pushed images are kept between runs, like the binaries, so a warm start pushes nothing."""
    return cache_dir() / "registry"
