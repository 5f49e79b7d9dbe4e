"""A name or namespace is one segment of the request path, whatever it holds: a `?` or `#` in it is sent
quoted (never a query of its own, such as `?dryRun=All`), and what cannot be one segment (`.`, `..`, an
empty name, a `/` or a `%`, as client-go refuses) is refused before anything reaches the wire. Through the
client's public calls, the SDK and the CLI, against a loopback server that records each request line."""

from __future__ import annotations

import io
from pathlib import Path

import pytest

from mpioperator.cli.main import main
from mpioperator.client.aio import AsyncMPIJobClient
from mpioperator.kube.client import KubeClient
from mpioperator.kube.errors import InvalidRequest
from mpioperator.kube.resources import CONFIG_MAPS, MPIJOBS
from test.unit.kube.test_kube_request_head import kubeconfig, loopback


def request_lines(wire_requests: list[tuple[list[str], bytes]]) -> list[str]:
    return [lines[0] for lines, _ in wire_requests]


async def test_a_query_or_fragment_in_a_name_reaches_the_wire_quoted_inside_its_segment() -> None:
    with loopback() as (host, wire):
        client = KubeClient.explicit(host)
        try:
            await client.get(CONFIG_MAPS, "a?dryRun=All", "ns")
            await client.delete(CONFIG_MAPS, "b#frag", "ns?x=1")
        finally:
            await client.close()
    assert request_lines(wire.requests) == [
        "GET /api/v1/namespaces/ns/configmaps/a%3FdryRun=All HTTP/1.1",
        "DELETE /api/v1/namespaces/ns%3Fx=1/configmaps/b%23frag HTTP/1.1",
    ]


@pytest.mark.parametrize(
    ("name", "namespace"),
    [
        ("..", "ns"),
        (".", "ns"),
        ("", "ns"),
        ("a/status", "ns"),
        ("a%2Fstatus", "ns"),
        ("a", ".."),
        ("a", "x/y"),
    ],
    ids=["dot-dot", "dot", "empty", "slash", "percent", "namespace dot-dot", "namespace slash"],
)
async def test_a_name_that_cannot_be_one_path_segment_is_refused_before_the_wire(
    name: str, namespace: str
) -> None:
    with loopback() as (host, wire):
        client = KubeClient.explicit(host)
        try:
            for call in (
                client.get(CONFIG_MAPS, name, namespace),
                client.delete(CONFIG_MAPS, name, namespace),
                client.patch(CONFIG_MAPS, name, {"data": {}}, namespace),
            ):
                with pytest.raises(InvalidRequest, match="cannot be a path segment"):
                    await call
            await client.get(CONFIG_MAPS, "after", "ns")
        finally:
            await client.close()
    assert request_lines(wire.requests) == ["GET /api/v1/namespaces/ns/configmaps/after HTTP/1.1"]


async def test_the_sdk_sends_a_job_name_holding_a_query_as_one_segment() -> None:
    with loopback() as (host, wire):
        kube = KubeClient.explicit(host)
        try:
            await AsyncMPIJobClient(kube, namespace="ns").delete("pi?dryRun=All")
        finally:
            await kube.close()
    assert request_lines(wire.requests) == [
        f"DELETE {MPIJOBS.path('ns')}/pi%3FdryRun=All HTTP/1.1",
    ]


def test_the_cli_refuses_a_dot_dot_job_name_in_one_line_and_sends_nothing(tmp_path: Path) -> None:
    with loopback() as (host, wire):
        config = kubeconfig(tmp_path, host, {"token": "t"})
        out, err = io.StringIO(), io.StringIO()
        code = main(["delete", "..", "-n", "ns", "--kubeconfig", str(config)], out, err)
    assert code == 1
    assert err.getvalue().startswith("error: ") and err.getvalue().count("\n") == 1
    assert "cannot be a path segment" in err.getvalue()
    assert request_lines(wire.requests) == []
