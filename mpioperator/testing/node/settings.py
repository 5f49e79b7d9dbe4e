"""Where a real node lives on the host: its bridge and subnet, its cgroup root, its files."""

from __future__ import annotations

import ipaddress
import os
from dataclasses import dataclass
from pathlib import Path

BRIDGE_ENV = "MPIOPERATOR_NODE_BRIDGE"
SUBNET_ENV = "MPIOPERATOR_NODE_SUBNET"
DEFAULT_BRIDGE = "mpiop0"
DEFAULT_SUBNET = "10.88.0.0/16"
# The first address of the API server's Service range: in-cluster clients dial it (KUBERNETES_SERVICE_HOST).
KUBERNETES_SERVICE_IP = "10.96.0.1"
CLUSTER_DOMAIN = "cluster.local"
NODE_NAME = "real-node"
# Further real nodes of one cluster are told apart by a letter: bridge `mpiop0b`, node `real-node-b`.
SIBLING_LETTERS = "bcdefgh"
# Where the containers' images come from: one local registry stands in for both, so manifests and examples
# that name docker.io or registry.k8s.io images run unchanged.
MIRRORED_REGISTRIES = ("docker.io", "registry.k8s.io")
PAUSE_IMAGE = "registry.k8s.io/pause:3.10"


@dataclass(frozen=True)
class NodeNetwork:
    """The bridge every pod's veth joins; its first address is the node's (kubelet, CoreDNS, API server)."""

    bridge: str = DEFAULT_BRIDGE
    subnet: str = DEFAULT_SUBNET

    def __post_init__(self) -> None:
        if not 1 <= len(self.bridge) <= 15 or not self.bridge.replace("-", "").isalnum():
            raise ValueError(
                f"bridge name {self.bridge!r}: 1-15 letters, digits or '-' (a Linux interface name)"
            )
        network = ipaddress.ip_network(self.subnet)
        if network.version != 4 or network.prefixlen > 24:
            raise ValueError(f"subnet {self.subnet!r}: an IPv4 network of /24 or larger")
        if ipaddress.ip_address(KUBERNETES_SERVICE_IP) in network:
            raise ValueError(f"subnet {self.subnet!r} overlaps the Service IP {KUBERNETES_SERVICE_IP}")

    @classmethod
    def from_env(cls) -> NodeNetwork:
        return cls(
            bridge=os.environ.get(BRIDGE_ENV, DEFAULT_BRIDGE),
            subnet=os.environ.get(SUBNET_ENV, DEFAULT_SUBNET),
        )

    def sibling(self, index: int) -> NodeNetwork:
        """The network of a cluster's `index`-th further real node (index 0 is this one): the bridge name
        with a letter added and the subnet as many subnets of the same size further on, so every node of
        a cluster takes its bridges and subnets from the one setting (MPIOPERATOR_NODE_BRIDGE, ..._SUBNET)."""
        if index == 0:
            return self
        if index > len(SIBLING_LETTERS):
            raise ValueError(f"at most {len(SIBLING_LETTERS) + 1} real nodes per cluster")
        network = ipaddress.ip_network(self.subnet)
        shifted = ipaddress.ip_network(
            f"{network.network_address + index * network.num_addresses}/{network.prefixlen}"
        )
        return NodeNetwork(bridge=f"{self.bridge}{SIBLING_LETTERS[index - 1]}", subnet=str(shifted))

    @property
    def gateway(self) -> str:
        return str(next(ipaddress.ip_network(self.subnet).hosts()))

    @property
    def prefix_length(self) -> int:
        return ipaddress.ip_network(self.subnet).prefixlen

    @property
    def tag(self) -> str:
        """Names everything this node adds to shared host state (iptables comments, the cgroup root)."""
        return f"mpioperator-{self.bridge}"


def node_name(index: int) -> str:
    """`real-node` for a cluster's first real node (the one-node name every test and the demo know), then
    `real-node-b`, `real-node-c`..."""
    return NODE_NAME if index == 0 else f"{NODE_NAME}-{SIBLING_LETTERS[index - 1]}"


@dataclass(frozen=True)
class NodeLayout:
    """Every file of the node lives under `root` (inside the cluster's work dir) and goes with it."""

    root: Path

    @property
    def containerd_config(self) -> Path:
        return self.root / "containerd.toml"

    @property
    def pod_logs(self) -> Path:
        """The kubelet's pod log directory: not the host's /var/log/pods, which every node on the machine
        would share, and where one kubelet removes the log directories of pods it does not know."""
        return self.root / "pod-logs"

    @property
    def containerd_root(self) -> Path:
        return self.root / "containerd-root"

    @property
    def containerd_state(self) -> Path:
        return self.root / "containerd-state"

    @property
    def containerd_socket(self) -> Path:
        return self.containerd_state / "containerd.sock"

    @property
    def registry_hosts(self) -> Path:
        return self.root / "certs.d"

    @property
    def cni_conf_dir(self) -> Path:
        return self.root / "cni"

    @property
    def cni_ipam_dir(self) -> Path:
        return self.root / "cni-ipam"

    @property
    def kubelet_root(self) -> Path:
        return self.root / "kubelet"

    @property
    def kubelet_config(self) -> Path:
        return self.root / "kubelet.yaml"

    @property
    def kubelet_kubeconfig(self) -> Path:
        return self.root / "kubelet.kubeconfig"

    @property
    def state_file(self) -> Path:
        """What teardown needs to undo this node, written before anything is changed on the host."""
        return self.root / "node-state.json"
