"""The host state a real node changes, read and undone: bridge, veths, iptables rules, cgroups, mounts,
processes. Every function here is idempotent, so teardown can run again after an interrupted one."""

from __future__ import annotations

import contextlib
import os
import shlex
import signal
import subprocess
from collections.abc import Iterable, Sequence
from pathlib import Path

from mpioperator.testing.node.settings import NodeNetwork
from mpioperator.testing.process import wait_pids_gone

IPTABLES_TABLES = ("filter", "nat", "mangle", "raw")


class HostCommandError(RuntimeError):
    pass


def run(argv: Sequence[str], *, check: bool = True) -> subprocess.CompletedProcess[str]:
    result = subprocess.run(list(argv), capture_output=True, text=True, check=False, timeout=60)
    if check and result.returncode != 0:
        raise HostCommandError(f"{' '.join(argv)} failed ({result.returncode}): {result.stderr.strip()}")
    return result


# -- network ----------------------------------------------------------------------------------------------


def link_exists(name: str) -> bool:
    return Path("/sys/class/net", name).exists()


def links() -> set[str]:
    return set(os.listdir("/sys/class/net"))


def create_bridge(network: NodeNetwork) -> None:
    """Up before CoreDNS and the kubelet start, so both can bind the node's address at once."""
    if not link_exists(network.bridge):
        run(["ip", "link", "add", network.bridge, "type", "bridge"])
    address = f"{network.gateway}/{network.prefix_length}"
    if address not in run(["ip", "-o", "addr", "show", "dev", network.bridge]).stdout:
        run(["ip", "addr", "add", address, "dev", network.bridge])
    run(["ip", "link", "set", network.bridge, "up"])


def delete_bridge(network: NodeNetwork) -> None:
    """Its veths first (a pod's end goes with its network namespace, but not always at once), then itself."""
    if not link_exists(network.bridge):
        return
    for port in bridge_ports(network.bridge):
        run(["ip", "link", "del", port], check=False)
    run(["ip", "link", "del", network.bridge], check=False)


def bridge_ports(bridge: str) -> list[str]:
    directory = Path("/sys/class/net", bridge, "brif")
    return sorted(os.listdir(directory)) if directory.exists() else []


IP_FORWARD = Path("/proc/sys/net/ipv4/ip_forward")


def enable_forwarding() -> None:
    """Pods on two nodes' bridges reach each other only through the host's forwarding. Left on afterwards:
    it is the host's setting (Docker and every Kubernetes node turn it on too), not the node's."""
    if IP_FORWARD.read_text().strip() != "1":
        IP_FORWARD.write_text("1\n")


def iptables_rules(table: str) -> list[str]:
    """`iptables -S` lines of one table: chains (-N/-P) and rules (-A), without counters."""
    return run(["iptables", "-w", "-t", table, "-S"]).stdout.splitlines()


def iptables_snapshot() -> dict[str, list[str]]:
    return {table: iptables_rules(table) for table in IPTABLES_TABLES}


def add_nat_rule(rule: Sequence[str]) -> None:
    add_rule("nat", rule)


def add_rule(table: str, rule: Sequence[str], *, first: bool = False) -> None:
    """Append (or, `first`, insert at the top) a rule unless it is there already."""
    chain, spec = rule[0], list(rule[1:])
    if run(["iptables", "-w", "-t", table, "-C", chain, *spec], check=False).returncode != 0:
        run(["iptables", "-w", "-t", table, "-I" if first else "-A", chain, *spec])


def delete_rule(table: str, rule: Sequence[str]) -> None:
    """Every copy of the rule."""
    chain, spec = rule[0], list(rule[1:])
    while run(["iptables", "-w", "-t", table, "-C", chain, *spec], check=False).returncode == 0:
        run(["iptables", "-w", "-t", table, "-D", chain, *spec])


def remove_rules_tagged(tag: str) -> None:
    """Every rule whose comment is our tag, in every table, however many times it was added."""
    for table in IPTABLES_TABLES:
        for line in iptables_rules(table):
            tokens = shlex.split(line)
            if tokens[0] == "-A" and tag in tokens:
                run(["iptables", "-w", "-t", table, "-D", *tokens[1:]], check=False)


def remove_chains_not_in(before: dict[str, list[str]]) -> None:
    """Chains the kubelet made (its canary and hint chains) that were not there before the node started."""
    for table in IPTABLES_TABLES:
        existed = {line.split()[1] for line in before.get(table, []) if line.startswith("-N ")}
        made = [line.split()[1] for line in iptables_rules(table) if line.startswith("-N ")]
        for chain in (c for c in made if c not in existed):
            # Rules elsewhere that jump here must go before the chain can.
            for line in iptables_rules(table):
                tokens = shlex.split(line)
                if tokens[0] == "-A" and _jumps_to(tokens, chain):
                    run(["iptables", "-w", "-t", table, "-D", *tokens[1:]], check=False)
            run(["iptables", "-w", "-t", table, "-F", chain], check=False)
            run(["iptables", "-w", "-t", table, "-X", chain], check=False)


def _jumps_to(tokens: list[str], chain: str) -> bool:
    return any(tokens[i] in ("-j", "-g") and tokens[i + 1] == chain for i in range(len(tokens) - 1))


# -- cgroups ----------------------------------------------------------------------------------------------


def cgroup_mounts() -> list[Path]:
    """Every mounted cgroup hierarchy (v1 controllers, named ones, a v2 `unified` one on hybrid hosts)."""
    found = []
    for line in Path("/proc/self/mountinfo").read_text().splitlines():
        left, _, right = line.partition(" - ")
        fstype = right.split()[0] if right else ""
        if fstype in ("cgroup", "cgroup2"):
            found.append(Path(left.split()[4]))
    return found


# How many busy host sessions the node's pods together weigh as much as, for the CPU scheduler. The kernel
# groups the root cgroup's processes by session (autogroups, on by default) and weighs each group like a
# cgroup of the default weight, whatever the processes' nice values: at the default, a niced build beside
# the tests, or each busy process of another cluster, got as much CPU as all of the node's pods together.
# Training on 2 shared cores then crawled (the TensorFlow benchmark's workers ran 0.4 s in 10, runnable
# the rest). At 8 the pods get 8/9 of the CPUs against one busy session, and the node's own control plane
# (a session per process) still gets its turn.
NODE_CPU_SESSIONS = 8
# Each hierarchy's default weight: cgroup v1's cpu.shares, cgroup v2's cpu.weight.
_DEFAULT_CPU_WEIGHTS = {"cpu.shares": 1024, "cpu.weight": 100}


def create_cgroup_root(name: str) -> None:
    """The kubelet insists that its cgroup root exists in every hierarchy before it starts; its CPU weight
    is that of NODE_CPU_SESSIONS host sessions."""
    for mount in cgroup_mounts():
        directory = mount / name
        directory.mkdir(exist_ok=True)
        for knob, default in _DEFAULT_CPU_WEIGHTS.items():
            if (directory / knob).exists():
                (directory / knob).write_text(str(default * NODE_CPU_SESSIONS))
        # A new cpuset has no CPUs or memory nodes until given its parent's; nothing could join it.
        for knob in ("cpuset.cpus", "cpuset.mems"):
            parent = mount / knob
            child = directory / knob
            if parent.exists() and child.exists() and not child.read_text().strip():
                child.write_text(parent.read_text())


def cgroup_dirs(name: str) -> list[Path]:
    return [mount / name for mount in cgroup_mounts() if (mount / name).is_dir()]


def cgroup_pids(name: str) -> set[int]:
    pids: set[int] = set()
    for root in cgroup_dirs(name):
        for directory in _cgroup_tree_deepest_first(root):
            with contextlib.suppress(OSError, ValueError):
                pids.update(int(p) for p in (directory / "cgroup.procs").read_text().split())
    return pids


def _cgroup_tree_deepest_first(root: Path) -> list[Path]:
    """The cgroup directories under `root` and `root` itself, children before parents. The kernel removes a
    container's cgroup while we walk when its shim exits: os.walk skips a directory gone before it was
    listed (pathlib's rglob raises), so the walk sees what is there."""
    found: list[Path] = []
    for directory, _subdirs, _files in os.walk(root, topdown=False):
        found.append(Path(directory))
    return found


def remove_cgroup_root(name: str) -> None:
    """Deepest first: a cgroup directory can only be removed once it has no children and no processes."""
    for root in cgroup_dirs(name):
        for directory in _cgroup_tree_deepest_first(root):
            with contextlib.suppress(OSError):
                directory.rmdir()


# -- processes --------------------------------------------------------------------------------------------


def kill_pids(pids: Iterable[int], *, timeout: float = 15.0) -> list[int]:
    """SIGKILL and wait; returns the pids still alive after `timeout`."""
    pids = [p for p in pids if p != os.getpid()]
    for pid in pids:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, signal.SIGKILL)
    return wait_pids_gone(pids, timeout)


def pids_with_argument(fragment: str) -> list[int]:
    """Processes whose command line mentions `fragment` (a shim names its containerd's socket)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            argv = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if fragment in argv:
            found.append(int(entry.name))
    return found


# -- mounts -----------------------------------------------------------------------------------------------


def mount_points() -> list[str]:
    points = []
    for line in Path("/proc/self/mountinfo").read_text().splitlines():
        # Mount points escape spaces and other characters as octal; decode them back.
        points.append(line.split()[4].encode().decode("unicode_escape"))
    return points


def unmount_under(directory: Path) -> list[str]:
    """Lazily unmount everything mounted at or below `directory`, deepest first; returns what remains."""
    prefix = str(directory).rstrip("/")

    def below() -> list[str]:
        return [p for p in mount_points() if p == prefix or p.startswith(prefix + "/")]

    for _ in range(5):
        points = below()
        if not points:
            return []
        for point in sorted(points, key=lambda p: -p.count("/")):
            run(["umount", "-l", point], check=False)
    return below()
