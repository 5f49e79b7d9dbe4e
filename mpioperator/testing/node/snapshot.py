"""What a real node could leave behind on the host, captured before and after, so a test can compare.

Everything is scoped to one node (its bridge, subnet and cgroup tag, and its cluster's work dir), so other
clusters and nodes on the same machine, another test run's among them, never count as leftovers."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from mpioperator.testing.node import host
from mpioperator.testing.node.settings import NodeNetwork
from mpioperator.testing.process import pid_alive


@dataclass(frozen=True)
class Process:
    pid: int
    name: str
    argv: str


@dataclass(frozen=True)
class HostSnapshot:
    network: NodeNetwork
    processes: frozenset[Process]
    mounts: frozenset[str]
    detached_links: frozenset[str]
    iptables: frozenset[str]
    cgroups: frozenset[str]

    @classmethod
    def take(cls, network: NodeNetwork) -> HostSnapshot:
        in_cgroups = host.cgroup_pids(network.tag)
        return cls(
            network=network,
            processes=frozenset(_live_processes(in_cgroups)),
            mounts=frozenset(host.mount_points()),
            detached_links=frozenset(_ours_or_detached_links(network)),
            iptables=frozenset(
                f"{table}: {rule}"
                for table, rules in host.iptables_snapshot().items()
                for rule in rules
                if network.tag in rule or network.subnet in rule
            ),
            cgroups=frozenset(str(d) for d in host.cgroup_dirs(network.tag)),
        )

    def left_since(self, before: HostSnapshot, work_dir: Path | str) -> dict[str, list[str]]:
        """What the node whose cluster lived in `work_dir` left that was not here before, by kind (processes
        naming the work dir or in the node's cgroups, mounts and network namespaces below it, its bridge or
        a veth torn from it, its iptables rules, its cgroups); empty when the host is as it was."""
        root = str(work_dir)
        in_cgroups = host.cgroup_pids(self.network.tag)
        new_mounts = sorted(p for p in self.mounts - before.mounts if p.startswith(root))
        found = {
            "processes": [
                f"{p.pid} {p.name}"
                for p in sorted(self.processes - before.processes, key=lambda p: p.pid)
                if root in p.argv or p.pid in in_cgroups
            ],
            "mounts": new_mounts,
            "netns": [p for p in new_mounts if "netns" in p],
            "interfaces": sorted(self.detached_links - before.detached_links),
            "iptables": sorted(self.iptables - before.iptables),
            "cgroups": sorted(self.cgroups - before.cgroups),
        }
        return {kind: items for kind, items in found.items() if items}


def _live_processes(in_cgroups: set[int]) -> list[Process]:
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        pid = int(entry.name)
        try:
            name = (entry / "comm").read_text().strip()
            argv = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        # A process that has exited but whose parent (init, for daemonized shims) has not reaped it yet
        # holds nothing: no mount, socket or cgroup.
        if pid_alive(pid) or pid in in_cgroups:
            found.append(Process(pid, name, argv))
    return found


def _ours_or_detached_links(network: NodeNetwork) -> list[str]:
    """The node's bridge, and veths on no bridge at all (a pod's host end that outlived its sandbox)."""
    found = []
    for name in os.listdir("/sys/class/net"):
        if name == network.bridge or (
            name.startswith("veth") and not Path("/sys/class/net", name, "master").exists()
        ):
            found.append(name)
    return found
