"""The health server answers like the apiserver healthz handlers and serves Prometheus metrics."""

from __future__ import annotations

import asyncio
import logging
import re

import pytest
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


async def _exchange(host: str, port: int, request: bytes) -> bytes:
    reader, writer = await asyncio.open_connection(host, port)
    try:
        writer.write(request)
        await writer.drain()
        return await asyncio.wait_for(reader.read(), timeout=30)
    except ConnectionResetError:
        return b""  # the server may close on a request it will not read
    finally:
        writer.close()


@pytest.mark.parametrize("host", ["127.0.0.1", "::1"])
async def test_serves_http_on_ipv4_and_ipv6(host: str) -> None:
    server, _ = _server()
    server.add_health_check("ping", lambda: None)
    await server.start()
    try:
        response = await _exchange(
            host, server.port, b"GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
        )
    finally:
        await server.stop()
    assert response.startswith(b"HTTP/1.1 200 OK\r\n")
    assert response.endswith(b"\r\n\r\nok")


async def test_head_answers_without_a_body_and_other_methods_are_refused() -> None:
    server, _ = _server()
    server.add_health_check("ping", lambda: None)
    await server.start()
    try:
        head = await _exchange(
            "127.0.0.1", server.port, b"HEAD /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
        )
        post = await _exchange(
            "127.0.0.1",
            server.port,
            b"POST /healthz HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\nConnection: close\r\n\r\n",
        )
    finally:
        await server.stop()
    assert head.startswith(b"HTTP/1.1 200 OK\r\n") and head.endswith(b"\r\n\r\n")
    assert post.startswith(b"HTTP/1.1 405 ")


async def test_a_request_line_too_long_is_refused_and_the_server_keeps_serving() -> None:
    loop = asyncio.get_running_loop()
    unhandled: list[dict[str, object]] = []
    previous = loop.get_exception_handler()  # the loop is the session's: hand it back as it was
    loop.set_exception_handler(lambda _, context: unhandled.append(context))
    server, _ = _server()
    server.add_health_check("ping", lambda: None)
    try:
        await server.start()
        try:
            long_line = b"GET /" + b"a" * (64 * 1024 + 1) + b" HTTP/1.1\r\nHost: x\r\n\r\n"
            refused = await _exchange("127.0.0.1", server.port, long_line)
            after = await _exchange(
                "127.0.0.1", server.port, b"GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
            )
        finally:
            await server.stop()
    finally:
        loop.set_exception_handler(previous)
    assert refused == b"" or re.match(rb"HTTP/1\.[01] 4\d\d ", refused), refused[:200]
    assert after.startswith(b"HTTP/1.1 200 OK\r\n")
    assert [context.get("exception") or context.get("message") for context in unhandled] == []


@pytest.mark.parametrize("sent", [b"", b"GET /heal"], ids=["nothing", "half a request line"])
async def test_a_connection_without_a_whole_request_is_closed_once_idle_too_long(sent: bytes) -> None:
    server = HealthServer(port=0, registry=CollectorRegistry(), serve_metrics=False, idle_seconds=0.5)
    await server.start()
    try:
        reader, writer = await asyncio.open_connection("127.0.0.1", server.port)
        writer.write(sent)
        # The server closing it is what ends this read; the bound only keeps a broken test from hanging.
        answer = await asyncio.wait_for(reader.read(), timeout=60)
        writer.close()
    finally:
        await server.stop()
    assert answer == b""


async def test_probes_write_no_access_log(caplog: pytest.LogCaptureFixture) -> None:
    server, _ = _server()
    server.add_health_check("ping", lambda: None)
    await server.start()
    try:
        with caplog.at_level(logging.DEBUG):
            answer = await _exchange(
                "127.0.0.1", server.port, b"GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
            )
    finally:
        await server.stop()
    assert answer.startswith(b"HTTP/1.1 200 OK\r\n")
    assert [record.getMessage() for record in caplog.records if record.name.startswith("aiohttp")] == []


@pytest.mark.parametrize(
    "garbage",
    [
        b"GET /healthz HTTP/1.1\r\nHost: x\r\nContent-Length: nope\r\n\r\n",
        b"GET /healthz HTTP/9.9\r\nHost: x\r\n\r\n",
        b"GET /" + b"a" * (64 * 1024 + 1) + b" HTTP/1.1\r\nHost: x\r\n\r\n",
    ],
    ids=["bad header", "bad version", "line too long"],
)
async def test_a_bad_request_is_logged_as_one_warning_line_without_a_traceback(
    garbage: bytes, caplog: pytest.LogCaptureFixture
) -> None:
    server, _ = _server()
    server.add_health_check("ping", lambda: None)
    await server.start()
    try:
        with caplog.at_level(logging.DEBUG):
            await _exchange("127.0.0.1", server.port, garbage)
            after = await _exchange(
                "127.0.0.1", server.port, b"GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
            )
    finally:
        await server.stop()
    assert after.startswith(b"HTTP/1.1 200 OK\r\n")
    records = [r for r in caplog.records if r.name.startswith(("aiohttp", "mpioperator"))]
    assert [(r.levelname, r.exc_info is not None) for r in records] == [("WARNING", False)]
    line = records[0].getMessage()
    assert "\n" not in line and "127.0.0.1" in line and "bad request" in line
