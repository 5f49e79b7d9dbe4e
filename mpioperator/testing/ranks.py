"""Where an MPI job's ranks ran, read from pi's "rank R of N on HOST" lines, checked against the hostfile.

An MPI whose launcher ignores the operator's settings (Open MPI 5 given only Open MPI 4's variables) runs
every rank on the launcher and exits 0: the job Succeeds and pi is right. Only where the ranks ran tells.
"""

from __future__ import annotations

import re

RANK_LINE = re.compile(r"^rank (\d+) of (\d+) on (\S+)$", re.MULTILINE)
# Open MPI's `host slots=n`, Hydra's `host:n`.
HOSTFILE_LINE = re.compile(r"^([^\s:#]+)(?::(\d+)|\s+slots=(\d+))?\s*$")


def ranks_by_host(log: str) -> dict[str, list[int]]:
    hosts: dict[str, list[int]] = {}
    for rank, _, hostname in RANK_LINE.findall(log):
        hosts.setdefault(hostname, []).append(int(rank))
    return {host: sorted(ranks) for host, ranks in hosts.items()}


def hostfile_slots(hostfile: str) -> dict[str, int]:
    """Host name (its first DNS label: what the pod's hostname is) -> slots, for the operator's hostfile."""
    slots: dict[str, int] = {}
    for line in hostfile.splitlines():
        if not line.strip():
            continue
        found = HOSTFILE_LINE.match(line.strip())
        if found is None:
            raise ValueError(f"not a hostfile line: {line!r}")
        host, hydra, openmpi = found.groups()
        slots[host.split(".")[0]] = int(hydra or openmpi or 1)
    return slots


def assert_ranks_ran_on_hostfile_hosts(log: str, hostfile: str, ranks: int) -> None:
    """Each of the ranks 0..ranks-1 said where it ran, once, on a host of the hostfile, and no host ran more
    ranks than its slots."""
    where = ranks_by_host(log)
    said = sorted(rank for host_ranks in where.values() for rank in host_ranks)
    assert said == list(range(ranks)), f"rank lines for {said}, expected 0..{ranks - 1}:\n{log}"
    slots = hostfile_slots(hostfile)
    strangers = sorted(set(where) - set(slots))
    assert not strangers, f"ranks ran on {strangers}, which the hostfile does not name:\n{hostfile}\n{log}"
    crowded = {host: r for host, r in where.items() if len(r) > slots[host]}
    assert not crowded, f"more ranks than slots on {sorted(crowded)}:\n{hostfile}\n{log}"
