"""One real node of a LocalCluster: its bridge and pod subnet, its cgroup root, its containerd (own root,
state and socket) and its kubelet. What all nodes of a cluster share (the CA, the registry, CoreDNS) is
in services.py; fleet.py starts and stops the nodes together.

Start-up is split around the API server: `prepare()` takes the host's slot for the node's bridge and issues
its certificates, `claim_host()` sets up its bridge, cgroup root and DNAT rule, `start()` runs containerd
and the kubelet, `wait_ready()` waits for the Node to be Ready. `stop_processes()` then `sweep()` undo it.
The faults the tests inject (`power_off`, `power_on`, `restart_kubelet`) act on this node alone.
"""

from __future__ import annotations

import contextlib
import time
from dataclasses import dataclass
from pathlib import Path

from mpioperator.testing.free_ports import free_port
from mpioperator.testing.node import config, host, slot
from mpioperator.testing.node.requirements import NodeUnavailable, host_problem
from mpioperator.testing.node.settings import KUBERNETES_SERVICE_IP, NodeLayout, NodeNetwork
from mpioperator.testing.node.teardown import NodeState, sweep
from mpioperator.testing.nodes import node_is_ready
from mpioperator.testing.pki import CertificateAuthority, Pair, write_cert_kubeconfig
from mpioperator.testing.plane import ControlPlane
from mpioperator.testing.process import ManagedProcess
from mpioperator.testing.wait import wait_for

# Kept importable from here, where callers have always found them.
__all__ = ["NodeCertificates", "NodeUnavailable", "RealNode", "host_problem"]


@dataclass(frozen=True)
class NodeCertificates:
    ca: Path
    kubelet_client: Pair
    kubelet_serving: Pair


class RealNode:
    def __init__(
        self,
        *,
        network: NodeNetwork,
        name: str,
        directory: str = "node",
        component_suffix: str = "",
        lock_timeout: float = 900.0,
        lease_seconds: int = 40,
    ) -> None:
        self.network = network
        self.name = name
        self._directory = directory
        # The cluster names its components' processes and logs; a second node's get its letter.
        self._suffix = component_suffix
        self._lock_timeout = lock_timeout
        self._lease_seconds = lease_seconds
        self._holds_slot = False
        self.layout: NodeLayout | None = None
        self.certs: NodeCertificates | None = None
        self.kubelet_port = 0
        self.registry_address = ""
        self._containerd: ManagedProcess | None = None
        self._kubelet: ManagedProcess | None = None
        self._kubelet_binary = Path("kubelet")

    def component(self, role: str) -> str:
        return f"{role}-{self._suffix}" if self._suffix else role

    # -- before the API server ------------------------------------------------------------------------

    def prepare(self, cluster_root: Path, ca: CertificateAuthority) -> None:
        """Lock the host's slot for this node's bridge and issue the kubelet's certificates."""
        self._take_lock()
        self.layout = NodeLayout(cluster_root / self._directory)
        self.layout.root.mkdir(parents=True, exist_ok=True)
        self.certs = NodeCertificates(
            ca=ca.cert,
            kubelet_client=ca.issue(
                f"{self.name}-kubelet-client",
                common_name=f"system:node:{self.name}",
                organizations=("system:nodes",),
            ),
            kubelet_serving=ca.issue(
                f"{self.name}-kubelet-serving",
                common_name=self.name,
                ips=(self.network.gateway,),
                dns_names=(self.name,),
                server=True,
            ),
        )

    # -- after the control plane ----------------------------------------------------------------------

    def claim_host(self, cluster: ControlPlane, iptables_before: dict[str, list[str]]) -> None:
        """The node's bridge (up before CoreDNS binds its address), cgroup root and DNAT rule, each written
        down first in the state file teardown reads. `iptables_before` is the host's rules before the
        cluster's first node started, so teardown removes the kubelets' chains and no one else's."""
        layout, _ = self._prepared()
        state = NodeState(
            bridge=self.network.bridge,
            subnet=self.network.subnet,
            root=str(layout.root),
            containerd_socket=str(layout.containerd_socket),
            iptables_before=iptables_before,
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

    def start(self, cluster: ControlPlane, *, registry_address: str, binaries: Path) -> None:
        """containerd, then the kubelet (not waited for: see wait_ready)."""
        layout, certs = self._prepared()
        self.registry_address = registry_address
        self._write_containerd_config(layout)
        self._start_containerd(cluster, layout)
        self._write_kubelet_config(cluster, layout, certs)
        self._kubelet_binary = binaries / "kubelet"
        self._start_kubelet(cluster, layout)

    def wait_ready(self, cluster: ControlPlane, timeout: float = 120.0) -> None:
        def ready() -> bool:
            if self._kubelet is not None:
                cluster.require_running(self._kubelet)
            return node_is_ready(cluster.rest, self.name)

        wait_for(ready, timeout=timeout, interval=0.5, what=f"real node {self.name} Ready")

    def _write_containerd_config(self, layout: NodeLayout) -> None:
        layout.containerd_config.write_text(config.containerd_config(layout))
        for name, text in config.registry_mirrors(self.registry_address).items():
            directory = layout.registry_hosts / name
            directory.mkdir(parents=True, exist_ok=True)
            (directory / "hosts.toml").write_text(text)
        layout.cni_conf_dir.mkdir(parents=True, exist_ok=True)
        (layout.cni_conf_dir / "10-mpioperator.conflist").write_text(
            config.dump_json(config.cni_conflist(self.network, layout))
        )

    def _start_containerd(self, cluster: ControlPlane, layout: NodeLayout) -> None:
        # A killed containerd leaves its socket file, which would pass for a serving one below and let the
        # kubelet start against a socket that refuses it (the kubelet then exits).
        layout.containerd_socket.unlink(missing_ok=True)
        proc = cluster.spawn_component(self.component("containerd"), config.containerd_argv(layout))
        self._containerd = proc

        def serving() -> bool:
            cluster.require_running(proc)
            return layout.containerd_socket.exists()

        wait_for(serving, timeout=30, interval=0.1, what=f"containerd's socket on {self.name}")

    def _write_kubelet_config(
        self, cluster: ControlPlane, layout: NodeLayout, certs: NodeCertificates
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
            lease_seconds=self._lease_seconds,
        )
        layout.kubelet_config.write_text(config.dump_json(kubelet))  # JSON is YAML
        layout.kubelet_root.mkdir(parents=True, exist_ok=True)

    def _start_kubelet(self, cluster: ControlPlane, layout: NodeLayout) -> None:
        argv = config.kubelet_argv(self._kubelet_binary, self.network, layout, node_name=self.name)
        self._kubelet = cluster.spawn_component(self.component("kubelet"), argv)

    # -- faults ---------------------------------------------------------------------------------------

    def partition(self) -> None:
        """Cut the node's pods off from every other node's (their packets dropped in the host's FORWARD
        chain, no reset, no ICMP); the kubelet still reaches the API server, so the node stays Ready."""
        for rule in config.isolation_rules(self.network):
            host.add_rule("filter", rule, first=True)

    def heal(self) -> None:
        for rule in config.isolation_rules(self.network):
            host.delete_rule("filter", rule)

    def power_off(self) -> None:
        """The node is lost as a machine is when it dies: its pods' traffic dropped first (so no peer gets a
        reset from a dying process), then its kubelet, containerd, shims and every container killed."""
        layout, _ = self._prepared()
        self.partition()
        for proc in (self._kubelet, self._containerd):
            if proc is not None:
                proc.kill()
        for _ in range(3):
            if not host.kill_pids(host.cgroup_pids(self.network.tag)):
                break
        host.kill_pids(host.pids_with_argument(f"-address {layout.containerd_socket}"))

    def power_on(self, cluster: ControlPlane) -> None:
        """Back as a rebooted machine: containerd and the kubelet start again on the node's files (the
        kubelet then finds its pods gone from the API server and removes what is left of them), and the
        node's traffic flows again."""
        layout, _ = self._prepared()
        self._start_containerd(cluster, layout)
        self._start_kubelet(cluster, layout)
        self.heal()

    def restart_kubelet(self, cluster: ControlPlane) -> None:
        """Stop the kubelet (SIGTERM, as systemd would on a restart) and start it again; its pods run on."""
        layout, _ = self._prepared()
        if self._kubelet is not None:
            self._kubelet.stop()
        self._start_kubelet(cluster, layout)

    def processes_alive(self) -> bool:
        return any(p is not None and p.running() for p in (self._kubelet, self._containerd))

    # -- teardown -------------------------------------------------------------------------------------

    def drain(self, cluster: ControlPlane, timeout: float = 30.0) -> None:
        """Cordon (so controllers' replacement pods land nowhere), force-delete every pod, and wait until
        the kubelet has stopped their sandboxes (no shim of ours left), so each went through CNI DEL."""
        if self.layout is None or not self.processes_alive():
            return
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

    def stop_processes(self) -> None:
        for proc in (self._kubelet, self._containerd):
            if proc is not None:
                proc.stop()
        self._kubelet = self._containerd = None

    def sweep(self) -> list[str]:
        """Undo everything on the host from the state file; returns what could not be removed."""
        problems: list[str] = []
        if self.layout is not None and self.layout.state_file.exists():
            problems = sweep(NodeState.read(self.layout.state_file))
        self._release_lock()
        return problems

    # -- the host's node slot -------------------------------------------------------------------------

    def _take_lock(self) -> None:
        """One node per bridge on a machine: a second run waits here instead of tearing the first down."""
        problem = host_problem()
        if problem:
            raise NodeUnavailable(problem)
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
            raise NodeUnavailable(f"RealNode.prepare() was not called for {self.name}")
        return self.layout, self.certs
