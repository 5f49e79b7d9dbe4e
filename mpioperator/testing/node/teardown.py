"""Undo everything a real node did to the host, from the state file it wrote before changing anything.

It works the same after a clean stop, after an exception halfway through start-up, and after the owning
process was SIGKILLed (then the next cluster to start runs it for the abandoned work dir): containerd's
shims and the containers under them outlive their parent, so nothing here relies on containerd or the
kubelet still answering.
"""

from __future__ import annotations

import contextlib
import errno
import json
import socket
from dataclasses import asdict, dataclass, field
from pathlib import Path

from mpioperator.testing.node import host
from mpioperator.testing.node.settings import NodeNetwork

# containerd 1.6 puts its shims' sockets here whatever its own state dir is.
SHIM_SOCKET_DIR = Path("/run/containerd/s")


@dataclass(frozen=True)
class NodeState:
    bridge: str
    subnet: str
    root: str
    containerd_socket: str
    iptables_before: dict[str, list[str]] = field(default_factory=dict)

    @property
    def network(self) -> NodeNetwork:
        return NodeNetwork(bridge=self.bridge, subnet=self.subnet)

    def write(self, path: Path) -> None:
        path.write_text(json.dumps(asdict(self), indent=2))

    @classmethod
    def read(cls, path: Path) -> NodeState:
        return cls(**json.loads(path.read_text()))


def sweep(state: NodeState) -> list[str]:
    """Remove the node's processes, mounts, network and cgroups; returns what could not be removed."""
    network = state.network
    problems: list[str] = []
    # Containers and sandboxes first (they hold mounts and network namespaces), then the shims that watch
    # them, then anything else still naming the node's files (an orphaned containerd or kubelet).
    for _ in range(3):
        if not host.kill_pids(host.cgroup_pids(network.tag)):
            break
    left = host.kill_pids(host.pids_with_argument(state.containerd_socket))
    # With the slash: another node's root (`node-b` beside `node`) may start with this one's.
    left += host.kill_pids(host.pids_with_argument(state.root.rstrip("/") + "/"))
    problems += [f"process {pid} did not die" for pid in left]
    problems += [f"mount {point} stayed" for point in host.unmount_under(Path(state.root))]
    host.delete_bridge(network)
    if host.link_exists(network.bridge):
        problems.append(f"interface {network.bridge} stayed")
    host.remove_rules_tagged(network.tag)
    if state.iptables_before:
        host.remove_chains_not_in(state.iptables_before)
    host.remove_cgroup_root(network.tag)
    problems += [f"cgroup {d} stayed" for d in host.cgroup_dirs(network.tag)]
    remove_stale_shim_sockets()
    return problems


def remove_stale_shim_sockets() -> None:
    """Shims killed without containerd's goodbye leave their socket files; nobody listens on those."""
    if not SHIM_SOCKET_DIR.is_dir():
        return
    for path in SHIM_SOCKET_DIR.iterdir():
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as probe:
            try:
                probe.connect(str(path))
            except OSError as err:
                if err.errno in (errno.ECONNREFUSED, errno.ENOENT):
                    with contextlib.suppress(OSError):
                        path.unlink()
