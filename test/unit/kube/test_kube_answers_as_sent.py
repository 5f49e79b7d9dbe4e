"""An answer is taken as the server sent it, from the server asked: a compressed body the client never asked
for is refused rather than inflated past the body cap, and a redirect is handed to the caller rather than
followed, so a request (and its body) never goes to another origin. Against local servers that misbehave
on purpose."""

from __future__ import annotations

import gzip
import socket
import threading
from collections.abc import Callable

import pytest

from mpioperator.client.aio import AsyncMPIJobClient
from mpioperator.client.errors import MPIJobError
from mpioperator.kube import errors, transport
from mpioperator.kube.list_options import ListOptions
from mpioperator.kube.resources import CONFIG_MAPS
from test.unit.kube.test_kube_unary_limits import TEST_CAP, Misbehaving, client_of, misbehaving, refused_get

# 64 MiB of JSON that gzip makes about 64 KiB: inflated, 64 times the test's cap.
INFLATED = 64 << 20


def _bomb() -> bytes:
    pad = b"x" * INFLATED
    return gzip.compress(b'{"kind":"ConfigMap","metadata":{"name":"a"},"pad":"' + pad + b'"}', 9)


def gzip_bomb(server: Misbehaving, conn: socket.socket) -> None:
    body = _bomb()
    conn.sendall(
        b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Encoding: gzip\r\n"
        b"Content-Length: %d\r\nConnection: close\r\n\r\n" % len(body)
    )
    conn.sendall(body)


async def test_a_gzip_answer_that_was_not_asked_for_is_refused_not_inflated_past_the_cap(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The real cap is 1 GiB; a smaller one shows the same bound without holding a gigabyte.
    monkeypatch.setattr(transport, "MAX_BODY", TEST_CAP)
    async with refused_get(gzip_bomb, request_timeout=30.0) as (error, _):
        assert error.status == 0
        assert "gzip" in error.message


class Recorder:
    """A server that records the head and body of every request it gets and answers 201."""

    def __init__(self) -> None:
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port = self._listener.getsockname()[1]
        self.requests: list[bytes] = []
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        try:
            while True:
                conn, _ = self._listener.accept()
                with conn:
                    conn.settimeout(10)
                    data = b""
                    while b"\r\n\r\n" not in data and (more := conn.recv(65536)):
                        data += more
                    self.requests.append(data)
                    conn.sendall(
                        b"HTTP/1.1 201 Created\r\nContent-Type: application/json\r\nContent-Length: 2\r\n"
                        b"Connection: close\r\n\r\n{}"
                    )
        except OSError:
            return

    def close(self) -> None:
        self._listener.close()


def redirect_to(other: Recorder) -> Callable[[Misbehaving, socket.socket], None]:
    def answer(server: Misbehaving, conn: socket.socket) -> None:
        conn.sendall(
            b"HTTP/1.1 307 Temporary Redirect\r\nLocation: http://127.0.0.1:%d/elsewhere\r\n"
            b"Content-Length: 0\r\nConnection: close\r\n\r\n" % other.port
        )

    return answer


async def test_a_redirect_is_not_followed_and_the_body_never_reaches_the_other_origin() -> None:
    other = Recorder()
    try:
        with misbehaving(redirect_to(other)) as server:
            async with client_of(server, request_timeout=10.0) as client:
                with pytest.raises(errors.ApiError) as failed:
                    await client.create(CONFIG_MAPS, {"metadata": {"name": "secret-stuff"}}, "ns")
    finally:
        other.close()
    assert failed.value.status == 307
    assert other.requests == []


async def test_the_sdk_does_not_follow_a_redirect_either() -> None:
    other = Recorder()
    job = {"apiVersion": "kubeflow.org/v2beta1", "kind": "MPIJob", "metadata": {"name": "pi"}, "spec": {}}
    try:
        with misbehaving(redirect_to(other)) as server:
            async with client_of(server, request_timeout=10.0) as kube:
                with pytest.raises(MPIJobError) as failed:
                    await AsyncMPIJobClient(kube, namespace="ns").create(job)
    finally:
        other.close()
    assert "307" in str(failed.value)
    assert other.requests == []


def gzip_watch(server: Misbehaving, conn: socket.socket) -> None:
    body = gzip.compress(b'{"type":"ADDED","object":{"metadata":{"name":"a"}}}\n' * 10_000, 9)
    conn.sendall(
        b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Encoding: gzip\r\n"
        b"Content-Length: %d\r\nConnection: close\r\n\r\n" % len(body)
    )
    conn.sendall(body)


async def test_a_watch_answered_in_gzip_is_refused_too() -> None:
    with misbehaving(gzip_watch) as server:
        async with client_of(server, request_timeout=10.0) as client:
            events = client.watch(CONFIG_MAPS, "ns", ListOptions(resource_version="1", timeout_seconds=5))
            with pytest.raises(errors.ApiError) as failed:
                await anext(events)
            await events.aclose()
    assert failed.value.status == 0
    assert "gzip" in failed.value.message
