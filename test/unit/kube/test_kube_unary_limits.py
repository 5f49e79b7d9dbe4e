"""A unary call is bounded as a whole: its timeout covers the whole answer however slowly it comes, and a
body too large to hold is refused, against a local server that misbehaves on purpose."""

from __future__ import annotations

import contextlib
import socket
import threading
from collections.abc import AsyncIterator, Callable, Iterator

import pytest

from mpioperator.kube import errors, transport
from mpioperator.kube.client import KubeClient
from mpioperator.kube.config import load_configuration
from mpioperator.kube.resources import CONFIG_MAPS
from mpioperator.kube.transport import Transport
from mpioperator.testing.wait import wait_for

TRICKLE_INTERVAL = 0.5
# At one byte every half second, the answer is whole after 60 s: a call with a 1 s timeout must have
# failed long before, however loaded the machine.
TRICKLE_BYTES = 120
ENDLESS_BOUND = 64 << 20  # where the "endless" body stops, so a client without a cap still ends
TEST_CAP = 1 << 20


class Misbehaving:
    """Answers one connection's first request with `answer(conn)`; `cut` is set once it saw the client
    close the connection before the answer was whole."""

    def __init__(self, answer: Callable[[Misbehaving, socket.socket], None]) -> None:
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port = self._listener.getsockname()[1]
        self.cut = threading.Event()
        self._answer = answer
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        with contextlib.suppress(OSError):
            conn, _ = self._listener.accept()
            with conn:
                data = b""
                while b"\r\n\r\n" not in data:
                    more = conn.recv(65536)
                    if not more:
                        return
                    data += more
                try:
                    self._answer(self, conn)
                except (ConnectionError, TimeoutError):
                    self.cut.set()

    def close(self) -> None:
        self._listener.close()


def client_closed_within(conn: socket.socket, seconds: float) -> bool:
    """Waits up to `seconds` for the client to close the connection (the client sends nothing more)."""
    conn.settimeout(seconds)
    try:
        return conn.recv(1) == b""
    except TimeoutError:
        return False


def trickle(server: Misbehaving, conn: socket.socket) -> None:
    body = b'{"kind":"ConfigMap","metadata":{"name":"a"}}'.ljust(TRICKLE_BYTES)
    conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n")
    conn.sendall(b"Content-Length: %d\r\n\r\n" % len(body))
    for i in range(len(body)):
        conn.sendall(body[i : i + 1])
        if client_closed_within(conn, TRICKLE_INTERVAL):
            server.cut.set()
            return


def huge_content_length(server: Misbehaving, conn: socket.socket) -> None:
    conn.sendall(
        b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n" % (1 << 40)
    )
    conn.sendall(b'{"kind":"ConfigMap"')
    if client_closed_within(conn, 60):
        server.cut.set()


def endless_chunks(server: Misbehaving, conn: socket.socket) -> None:
    conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n")
    head = b'{"kind":"ConfigMap","metadata":{"name":"a"},"pad":"'
    conn.sendall(b"%x\r\n%s\r\n" % (len(head), head))
    piece = b"x" * 65536
    sent = 0
    while sent < ENDLESS_BOUND:
        conn.sendall(b"%x\r\n%s\r\n" % (len(piece), piece))
        sent += len(piece)
    conn.sendall(b'2\r\n"}\r\n0\r\n\r\n')
    client_closed_within(conn, 60)


@contextlib.contextmanager
def misbehaving(answer: Callable[[Misbehaving, socket.socket], None]) -> Iterator[Misbehaving]:
    server = Misbehaving(answer)
    try:
        yield server
    finally:
        server.close()


@contextlib.asynccontextmanager
async def client_of(server: Misbehaving, request_timeout: float) -> AsyncIterator[KubeClient]:
    access = load_configuration(host=f"http://127.0.0.1:{server.port}", token="t")
    client = KubeClient(Transport(access, "ua/1"), request_timeout=request_timeout, protobuf=False)
    try:
        yield client
    finally:
        await client.close()


@contextlib.asynccontextmanager
async def refused_get(
    answer: Callable[[Misbehaving, socket.socket], None], request_timeout: float
) -> AsyncIterator[tuple[errors.ApiError, Misbehaving]]:
    """A GET answered by `answer`, which must fail: its error, and the server, still up."""
    with misbehaving(answer) as server:
        async with client_of(server, request_timeout) as client:
            with pytest.raises(errors.ApiError) as failed:
                await client.get(CONFIG_MAPS, "a", "ns")
        yield failed.value, server


async def test_an_answer_trickling_in_fails_the_call_once_its_timeout_has_passed() -> None:
    async with refused_get(trickle, request_timeout=1.0) as (error, server):
        assert error.status == 0
        assert "TimeoutError" in error.message
        wait_for(server.cut.is_set, timeout=30, what="the server to see the connection closed")


async def test_an_answer_whose_content_length_is_over_the_cap_is_refused() -> None:
    async with refused_get(huge_content_length, request_timeout=5.0) as (error, server):
        assert error.status == 0
        assert "BodyTooLarge" in error.message
        wait_for(server.cut.is_set, timeout=30, what="the server to see the connection closed")


async def test_an_endless_chunked_answer_is_stopped_once_it_passes_the_cap(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The real cap is 1 GiB; a smaller one shows the same stop without holding a gigabyte.
    monkeypatch.setattr(transport, "MAX_BODY", TEST_CAP)
    async with refused_get(endless_chunks, request_timeout=30.0) as (error, server):
        assert error.status == 0
        assert "BodyTooLarge" in error.message
        wait_for(server.cut.is_set, timeout=30, what="the server to be cut off mid-body")
