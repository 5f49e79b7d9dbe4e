"""A port picked free and then taken before a component binds it costs a retry, not the cluster."""

from __future__ import annotations

import socket
from collections.abc import Iterator

import pytest

from mpioperator.testing import cluster as cluster_module
from mpioperator.testing.cluster import LocalCluster
from mpioperator.testing.free_ports import free_port


@pytest.fixture
def taken_port() -> Iterator[int]:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen()
        yield int(sock.getsockname()[1])


def test_etcd_that_lost_its_port_is_started_on_new_ports(
    taken_port: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    handed_out: list[int] = []

    def first_one_taken() -> int:
        port = taken_port if not handed_out else free_port()
        handed_out.append(port)
        return port

    monkeypatch.setattr(cluster_module, "free_port", first_one_taken)
    with LocalCluster("apiserver") as cluster:
        assert handed_out[0] == taken_port
        assert cluster.etcd_port != taken_port
        assert cluster.rest.get("/api/v1/namespaces/default")["metadata"]["name"] == "default"
