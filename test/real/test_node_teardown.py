"""A real node leaves the host as it found it: no process, mount, interface, network namespace, iptables
rule or cgroup, after a clean stop and after its owner was SIGKILLed with pods running.

These clusters use their own bridge and subnet, so they never wait for the session's node."""

from __future__ import annotations

import os
from typing import Any

from mpioperator.testing.cluster import LocalCluster
from mpioperator.testing.node import slot
from mpioperator.testing.node.settings import NodeNetwork
from mpioperator.testing.node.snapshot import HostSnapshot
from mpioperator.testing.process import run_owner_then_kill
from mpioperator.testing.wait import wait_for
from test.real.conftest import require_real_node

NETWORK = NodeNetwork(bridge="mpiop9", subnet="10.77.0.0/16")


def sleeper(name: str) -> dict[str, Any]:
    """A pod with the mounts a real pod has: a Secret volume, the projected token, an emptyDir."""
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name},
        "spec": {
            "terminationGracePeriodSeconds": 1,
            "containers": [
                {
                    "name": "sleep",
                    "image": "mpioperator/mpi-pi:openmpi",
                    "command": ["sleep", "3600"],
                    "volumeMounts": [{"name": "scratch", "mountPath": "/scratch"}],
                }
            ],
            "volumes": [{"name": "scratch", "emptyDir": {}}],
        },
    }


def start_sleeper(cluster: LocalCluster, name: str) -> None:
    cluster.rest.create("/api/v1/namespaces/default/pods", sleeper(name))
    wait_for(
        lambda: (
            cluster.rest.get(f"/api/v1/namespaces/default/pods/{name}")["status"].get("phase") == "Running"
        ),
        timeout=120,
        what=f"pod {name} Running on the real node",
    )


def test_stopping_a_real_node_with_a_running_pod_leaves_the_host_as_it_was() -> None:
    require_real_node()
    with slot.holding(NETWORK.tag):
        before = HostSnapshot.take(NETWORK)
        cluster = LocalCluster("real", nodes=0, node_network=NETWORK)
        try:
            cluster.start()
            assert cluster.layout is not None
            work_dir = cluster.layout.root
            start_sleeper(cluster, "sleeper")
            during = HostSnapshot.take(NETWORK).left_since(before, work_dir)
            # The check below can only pass for the right reason if the node really changed the host.
            assert {"processes", "mounts", "netns", "interfaces", "iptables", "cgroups"} <= set(during), (
                during
            )
        finally:
            cluster.stop()
        after = HostSnapshot.take(NETWORK).left_since(before, work_dir)

    assert after == {}


_OWNER = f"""
import json, sys, time
from mpioperator.testing.cluster import LocalCluster
from mpioperator.testing.node.settings import NodeNetwork
from test.real.test_node_teardown import start_sleeper
cluster = LocalCluster("real", nodes=0, node_network=NodeNetwork(bridge={NETWORK.bridge!r}, subnet={NETWORK.subnet!r}))
cluster.start()
start_sleeper(cluster, "orphan")
print(json.dumps({{"dir": str(cluster.layout.root)}}), flush=True)
time.sleep(600)
"""


def test_a_real_node_whose_owner_was_killed_is_swept_by_the_next_cluster() -> None:
    require_real_node()
    before = HostSnapshot.take(NETWORK)
    started = run_owner_then_kill(_OWNER)
    # Containers and their shims outlive the owner: the sweep below has real work to do.
    left = HostSnapshot.take(NETWORK).left_since(before, started["dir"])
    assert {"processes", "mounts", "netns", "interfaces", "cgroups"} <= set(left), left

    # The owner's slot went with it; holding it now keeps any other node off the bridge until we looked.
    with slot.holding(NETWORK.tag):
        with LocalCluster("apiserver"):
            assert not os.path.exists(started["dir"])
        after = HostSnapshot.take(NETWORK).left_since(before, started["dir"])

    assert after == {}
