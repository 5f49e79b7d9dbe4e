"""A cluster's further real nodes take their bridges and subnets from the one setting, and one CoreDNS
serves them all."""

from __future__ import annotations

from pathlib import Path

import pytest

from mpioperator.testing.node.config import corefile, isolation_rules
from mpioperator.testing.node.settings import NodeNetwork, node_name


def test_the_second_and_third_nodes_get_the_next_bridges_and_subnets() -> None:
    first = NodeNetwork(bridge="mpiop4", subnet="10.84.0.0/16")

    assert first.sibling(0) == first
    assert first.sibling(1) == NodeNetwork(bridge="mpiop4b", subnet="10.85.0.0/16")
    assert first.sibling(2) == NodeNetwork(bridge="mpiop4c", subnet="10.86.0.0/16")
    assert [node_name(i) for i in range(3)] == ["real-node", "real-node-b", "real-node-c"]


def test_a_sibling_subnet_that_would_overlap_the_service_range_is_refused() -> None:
    with pytest.raises(ValueError, match="overlaps the Service IP"):
        NodeNetwork(bridge="mpiop0", subnet="10.92.0.0/16").sibling(4)


def test_one_coredns_binds_every_nodes_address(tmp_path: Path) -> None:
    text = corefile(["10.85.0.1", "10.86.0.1"], kubeconfig=tmp_path / "k", health_port=1, ready_port=2)

    assert "    bind 10.85.0.1 10.86.0.1\n" in text


def test_isolating_a_node_drops_its_pods_traffic_both_ways_under_its_tag() -> None:
    network = NodeNetwork(bridge="mpiop4c", subnet="10.86.0.0/16")

    rules = isolation_rules(network)

    assert [(r[0], r[1], r[2], r[-1]) for r in rules] == [
        ("FORWARD", "-s", "10.86.0.0/16", "DROP"),
        ("FORWARD", "-d", "10.86.0.0/16", "DROP"),
    ]
    assert all(network.tag in r for r in rules)
