"""Teardown leaves no process, port or directory behind, even when the owning process is SIGKILLed."""

from __future__ import annotations

import os

from mpioperator.testing.cluster import LocalCluster
from mpioperator.testing.free_ports import port_in_use
from mpioperator.testing.process import pid_alive, run_owner_then_kill, wait_pids_gone


def test_stop_leaves_no_process_port_or_directory() -> None:
    cluster = LocalCluster("apiserver")
    cluster.start()
    pids, ports = cluster.pids(), cluster.ports()
    assert cluster.layout is not None
    workdir = cluster.layout.root
    assert len(pids) == 2
    assert all(pid_alive(p) for p in pids)
    assert all(port_in_use(p) for p in ports)

    cluster.stop()

    assert wait_pids_gone(pids, timeout=10) == []
    assert not any(port_in_use(p) for p in ports)
    assert not workdir.exists()


_OWNER = """
import json, sys, time
from mpioperator.testing.cluster import LocalCluster
cluster = LocalCluster("apiserver")
cluster.start()
state = {"pids": cluster.pids(), "ports": cluster.ports(), "dir": str(cluster.layout.root)}
print(json.dumps(state), flush=True)
time.sleep(600)
"""


def test_components_die_with_a_sigkilled_owner() -> None:
    started = run_owner_then_kill(_OWNER)
    assert len(started["pids"]) == 2

    assert wait_pids_gone(started["pids"], timeout=10) == [], "etcd and apiserver died with their owner"
    assert not any(port_in_use(p) for p in started["ports"])

    # The next cluster to start sweeps the directory the killed owner could not remove.
    with LocalCluster("apiserver"):
        assert not os.path.exists(started["dir"])
