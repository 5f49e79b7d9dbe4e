"""The real node's kubelet keeps everything it writes under the node's own directory, so two nodes on one
machine (two test runs on different bridges) never touch each other's files."""

from __future__ import annotations

from pathlib import Path

from mpioperator.testing.node.config import kubelet_config
from mpioperator.testing.node.settings import NodeLayout, NodeNetwork


def test_pod_logs_are_written_under_the_nodes_directory_not_the_hosts_var_log_pods(tmp_path: Path) -> None:
    layout = NodeLayout(tmp_path / "node")
    config = kubelet_config(
        NodeNetwork(bridge="mpiop4", subnet="10.84.0.0/16"),
        layout,
        port=10250,
        client_ca=tmp_path / "ca.crt",
        serving_cert=tmp_path / "kubelet.crt",
        serving_key=tmp_path / "kubelet.key",
        cgroup_root="/mpioperator-mpiop4",
    )
    assert Path(config["podLogsDir"]).is_relative_to(layout.root)
