"""The health server answers like the apiserver healthz handlers and serves Prometheus metrics."""

from __future__ import annotations

import asyncio

from prometheus_client import CollectorRegistry, Counter

from mpioperator.app.server import HealthServer


def _server(serve_metrics: bool = True) -> tuple[HealthServer, CollectorRegistry]:
    registry = CollectorRegistry()
    return HealthServer(port=0, registry=registry, serve_metrics=serve_metrics), registry


def test_healthz_is_ok_when_every_check_passes() -> None:
    server, _ = _server()
    server.add_health_check("leaderElection", lambda: None)
    assert server.respond("/healthz") == (200, "text/plain; charset=utf-8", b"ok")
    assert server.respond("/healthz/leaderElection")[0] == 200


def test_failing_check_names_itself_and_returns_500() -> None:
    server, _ = _server()
    server.add_health_check(
        "leaderElection", lambda: "failed election to renew leadership on lease mpi-operator"
    )
    status, _, body = server.respond("/healthz")
    assert status == 500
    assert b"[-]leaderElection failed: failed election to renew leadership on lease mpi-operator" in body


def test_a_check_that_raises_is_reported_not_fatal() -> None:
    server, _ = _server()

    def broken() -> str | None:
        raise RuntimeError("boom")

    server.add_ready_check("informers", broken)
    status, _, body = server.respond("/readyz")
    assert status == 500
    assert b"RuntimeError: boom" in body


def test_unknown_path_is_404() -> None:
    server, _ = _server()
    assert server.respond("/nope")[0] == 404
    assert server.respond("/healthz/unknown-check")[0] == 404


def test_metrics_expose_the_registry_only_when_enabled() -> None:
    server, registry = _server()
    Counter("mpi_operator_jobs_created", "Counts number of MPI jobs created", registry=registry).inc()
    status, ctype, body = server.respond("/metrics")
    assert status == 200
    assert ctype.startswith("text/plain")
    assert b"mpi_operator_jobs_created_total 1.0" in body
    assert _server(serve_metrics=False)[0].respond("/metrics")[0] == 404


async def test_serves_http_on_a_real_socket() -> None:
    server, _ = _server()
    server.add_health_check("ping", lambda: None)
    await server.start()
    try:
        reader, writer = await asyncio.open_connection("127.0.0.1", server.port)
        writer.write(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
        await writer.drain()
        response = await reader.read()
        writer.close()
    finally:
        await server.stop()
    assert response.startswith(b"HTTP/1.1 200 OK\r\n")
    assert response.endswith(b"\r\n\r\nok")
