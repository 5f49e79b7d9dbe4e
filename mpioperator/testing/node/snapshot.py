"""What a real node could leave behind on the host, captured before and after, so a test can compare."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from mpioperator.testing.cluster import WORKDIR_PREFIX
from mpioperator.testing.node import host
from mpioperator.testing.process import pid_alive

NODE_PROGRAMS = frozenset({"kubelet", "containerd", "coredns", "registry"})
NODE_MOUNT_PLACES = (
    "/run/containerd",
    "/var/run/containerd",
    "/var/lib/kubelet",
    "/var/lib/containerd",
    "/run/netns/cni-",
    "/var/run/netns/cni-",
)


@dataclass(frozen=True)
class HostSnapshot:
    processes: frozenset[tuple[int, str]]
    mounts: frozenset[str]
    links: frozenset[str]
    netns: frozenset[str]
    iptables: tuple[tuple[str, tuple[str, ...]], ...]
    cgroups: frozenset[str]

    @classmethod
    def take(cls, cgroup_name: str) -> HostSnapshot:
        return cls(
            processes=frozenset(_node_programs(cgroup_name)),
            mounts=frozenset(p for p in host.mount_points() if _node_mount(p)),
            links=frozenset(host.links()),
            netns=frozenset(_netns()),
            iptables=tuple((t, tuple(rules)) for t, rules in sorted(host.iptables_snapshot().items())),
            cgroups=frozenset(str(d) for d in host.cgroup_dirs(cgroup_name)),
        )

    def left_since(self, before: HostSnapshot) -> dict[str, list[str]]:
        """What is here now that was not before, by kind; empty when the host is as it was."""
        now_rules = dict(self.iptables)
        rules = [
            f"{table}: {rule}"
            for table, before_rules in before.iptables
            for rule in now_rules.get(table, ())
            if rule not in before_rules
        ]
        found = {
            "processes": [f"{pid} {name}" for pid, name in sorted(self.processes - before.processes)],
            "mounts": sorted(self.mounts - before.mounts),
            "interfaces": sorted(self.links - before.links),
            "netns": sorted(self.netns - before.netns),
            "iptables": rules,
            "cgroups": sorted(self.cgroups - before.cgroups),
        }
        return {kind: items for kind, items in found.items() if items}


def _node_programs(cgroup_name: str) -> list[tuple[int, str]]:
    """Live processes a real node started: its programs naming a cluster's work dir (kubelet, containerd,
    CoreDNS, the registry, containerd's shims by their socket) and those in the node's cgroups (its
    containers). Programs of the same names elsewhere on the machine (another test's registry, a system
    containerd) are not the node's; the control plane's own teardown has tests of its own."""
    in_cgroups = host.cgroup_pids(cgroup_name)
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        pid = int(entry.name)
        try:
            name = (entry / "comm").read_text().strip()
            argv = (entry / "cmdline").read_bytes().decode(errors="replace")
        except OSError:
            continue
        # A process that has exited but whose parent (init, for daemonized shims) has not reaped it yet
        # holds nothing: no mount, socket or cgroup.
        ours = (name in NODE_PROGRAMS or name.startswith("containerd-shim")) and WORKDIR_PREFIX in argv
        if (ours or pid in in_cgroups) and pid_alive(pid):
            found.append((pid, name))
    return found


def _node_mount(point: str) -> bool:
    """Where a node's kubelet, containerd and CNI mount things: its work dir, or containerd's and the
    kubelet's default places should a setting be lost."""
    return WORKDIR_PREFIX in point or point.startswith(NODE_MOUNT_PLACES)


def _netns() -> list[str]:
    """Named CNI network namespaces (/var/run/netns/cni-*) and nsfs bind mounts a node would make."""
    directory = Path("/var/run/netns")
    named = (
        [f"{directory}/{n}" for n in os.listdir(directory) if n.startswith("cni-")]
        if directory.is_dir()
        else []
    )
    nsfs = []
    for line in Path("/proc/self/mountinfo").read_text().splitlines():
        left, _, right = line.partition(" - ")
        point = left.split()[4]
        if right.split()[:1] == ["nsfs"] and _node_mount(point):
            nsfs.append(point)
    return named + nsfs
