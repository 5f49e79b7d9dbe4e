"""Unary calls through the session against a scripted local server: bodies by length, chunked and to the
end, connections kept alive, closed by the server between requests, or failing; every failure an error
with status 0, never a hang."""

from __future__ import annotations

import contextlib
import socket
import threading
from collections.abc import AsyncIterator, Callable

import pytest

from mpioperator.kube import errors
from mpioperator.kube.config import load_configuration
from mpioperator.kube.transport import Answer, Transport

Answerer = Callable[[socket.socket, bytes], bool]


class ScriptedServer:
    """Reads each request head (and a Content-Length body) and lets `answer` write the reply; `answer`
    returns False to close the connection afterwards. Counts the connections it accepted."""

    def __init__(self, answer: Answerer) -> None:
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port = self._listener.getsockname()[1]
        self.connections = 0
        self.requests: list[bytes] = []
        self.closed = threading.Semaphore(0)  # released as each connection is closed
        self._answer = answer
        self._threads: list[threading.Thread] = []
        accept = threading.Thread(target=self._accept, daemon=True)
        accept.start()
        self._threads.append(accept)

    def _accept(self) -> None:
        while True:
            try:
                conn, _ = self._listener.accept()
            except OSError:
                return
            self.connections += 1
            thread = threading.Thread(target=self._serve, args=(conn,), daemon=True)
            thread.start()
            self._threads.append(thread)

    def _serve(self, conn: socket.socket) -> None:
        try:
            self._converse(conn)
        finally:
            conn.close()
            self.closed.release()

    def _converse(self, conn: socket.socket) -> None:
        with contextlib.suppress(OSError):
            data = b""
            while True:
                while b"\r\n\r\n" not in data:
                    more = conn.recv(65536)
                    if not more:
                        return
                    data += more
                head, _, data = data.partition(b"\r\n\r\n")
                length = 0
                for line in head.split(b"\r\n")[1:]:
                    name, _, value = line.partition(b":")
                    if name.strip().lower() == b"content-length":
                        length = int(value)
                while len(data) < length:
                    data += conn.recv(65536)
                request, data = head + b"\r\n\r\n" + data[:length], data[length:]
                self.requests.append(request)
                if not self._answer(conn, request):
                    return

    def close(self) -> None:
        self._listener.close()


@contextlib.asynccontextmanager
async def serving(answer: Answerer) -> AsyncIterator[tuple[ScriptedServer, Transport]]:
    server = ScriptedServer(answer)
    transport = Transport(load_configuration(host=f"http://127.0.0.1:{server.port}", pool_size=4), "ua/1")
    try:
        yield server, transport
    finally:
        await transport.close()
        server.close()


async def get(transport: Transport, path: str = "/", timeout: float = 5.0) -> Answer:
    return await transport.request("GET", path, timeout=timeout)


def by_length(body: bytes, *extra: bytes) -> bytes:
    head = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n" + b"".join(e + b"\r\n" for e in extra)
    return head + b"Content-Length: %d\r\n\r\n%s" % (len(body), body)


async def test_a_request_goes_out_with_host_headers_and_body_and_its_answer_comes_back_whole() -> None:
    def answer(conn: socket.socket, request: bytes) -> bool:
        conn.sendall(by_length(b'{"ok":true}', b"Audit-Id: 1", b"Warning: a", b"Warning: b"))
        return True

    async with serving(answer) as (server, transport):
        reply = await transport.request("PUT", "/api/v1/x", query={"y": 1}, body={"a": 1}, timeout=5.0)
    assert (reply.status, reply.body) == (200, b'{"ok":true}')
    assert reply.headers["Content-Type"] == "application/json"
    assert reply.headers["Warning"] == "a, b"
    sent = server.requests[0]
    assert sent.startswith(b"PUT /api/v1/x?y=1 HTTP/1.1\r\n")
    assert b"\r\nHost: 127.0.0.1:%d\r\n" % server.port in sent
    assert b"\r\nContent-Length: 7\r\n" in sent and sent.endswith(b'\r\n\r\n{"a":1}')
    assert b"Accept-Encoding" not in sent  # never asked to compress, as before


async def test_a_chunked_answer_is_read_to_its_last_chunk_and_the_connection_kept() -> None:
    def answer(conn: socket.socket, request: bytes) -> bool:
        conn.sendall(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n")
        conn.sendall(b"4\r\nabcd\r\n")
        conn.sendall(b"3\r\nefg\r\n0\r\n\r\n")
        return True

    async with serving(answer) as (server, transport):
        bodies = [(await get(transport)).body for _ in range(3)]
    assert bodies == [b"abcdefg"] * 3
    assert server.connections == 1


async def test_a_connection_the_server_closed_while_idle_is_replaced_before_the_next_request() -> None:
    def answer(conn: socket.socket, request: bytes) -> bool:
        conn.sendall(by_length(b"{}"))
        return False  # keep-alive announced, yet the connection is closed after the answer

    async with serving(answer) as (server, transport):
        for _ in range(3):
            assert (await get(transport)).status == 200
            assert server.closed.acquire(timeout=5)  # closed now, while the pool holds it idle
    assert server.connections == 3
    assert len(server.requests) == 3


async def test_connection_close_and_a_body_without_length_end_the_connection() -> None:
    def answer(conn: socket.socket, request: bytes) -> bool:
        conn.sendall(b"HTTP/1.1 500 Internal Server Error\r\nConnection: close\r\n\r\nto the end")
        return False

    async with serving(answer) as (server, transport):
        replies = [await get(transport) for _ in range(2)]
    assert [(r.status, r.body) for r in replies] == [(500, b"to the end")] * 2
    assert server.connections == 2


async def test_an_answer_cut_short_is_an_error_not_a_hang() -> None:
    def cut(conn: socket.socket, request: bytes) -> bool:
        conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\nonly this")
        return False

    async with serving(cut) as (_, transport):
        with pytest.raises(errors.ApiError, match="ClientPayloadError") as raised:
            await get(transport)
    assert raised.value.status == 0


async def test_no_answer_at_all_is_an_error_not_a_hang() -> None:
    async with serving(lambda conn, request: False) as (_, transport):
        with pytest.raises(errors.ApiError, match="ServerDisconnectedError") as raised:
            await transport.request("POST", "/create", body={}, timeout=5.0)
    assert raised.value.status == 0


async def test_a_server_that_does_not_answer_in_time_is_a_timeout() -> None:
    release = threading.Event()

    def silent(conn: socket.socket, request: bytes) -> bool:
        release.wait(10)
        return False

    async with serving(silent) as (_, transport):
        try:
            with pytest.raises(errors.ApiError, match="TimeoutError"):
                await get(transport, timeout=0.3)
        finally:
            release.set()


async def test_nothing_listening_is_an_error() -> None:
    with socket.create_server(("127.0.0.1", 0)) as taken:
        port = taken.getsockname()[1]
    transport = Transport(load_configuration(host=f"http://127.0.0.1:{port}"), "ua/1")
    try:
        with pytest.raises(errors.ApiError, match="ClientConnectorError") as raised:
            await get(transport, timeout=2.0)
    finally:
        await transport.close()
    assert raised.value.status == 0


def closing_at_each_second_request() -> Answerer:
    """Answers a connection's first request and closes it unanswered at the second: a server whose idle
    timeout fires just as the client sends on the kept-alive connection."""
    answered: list[socket.socket] = []

    def answer(conn: socket.socket, request: bytes) -> bool:
        if any(seen is conn for seen in answered):
            return False
        answered.append(conn)
        conn.sendall(by_length(b"{}"))
        return True

    return answer


async def test_a_get_on_a_kept_alive_connection_closed_unanswered_is_sent_once_more_on_a_new_one() -> None:
    async with serving(closing_at_each_second_request()) as (server, transport):
        assert (await get(transport, "/first")).status == 200
        assert (await get(transport, "/second")).status == 200
    assert [r.split(b" ")[1] for r in server.requests] == [b"/first", b"/second", b"/second"]
    assert server.connections == 2


async def test_a_post_on_a_kept_alive_connection_closed_unanswered_is_an_error_not_sent_again() -> None:
    async with serving(closing_at_each_second_request()) as (server, transport):
        assert (await get(transport, "/first")).status == 200
        with pytest.raises(errors.ApiError, match="ServerDisconnectedError"):
            await transport.request("POST", "/create", body={}, timeout=5.0)
    assert [r.split(b" ")[1] for r in server.requests] == [b"/first", b"/create"]
    assert server.connections == 1


async def test_a_cluster_reached_through_a_proxy_url_sends_its_requests_to_the_proxy() -> None:
    def answer(conn: socket.socket, request: bytes) -> bool:
        conn.sendall(by_length(b'{"kind":"Namespace"}'))
        return True

    proxy = ScriptedServer(answer)
    access = load_configuration(host="http://api.invalid:6443")
    access.proxy = f"http://127.0.0.1:{proxy.port}"
    transport = Transport(access, "ua/1")
    try:
        reply = await transport.request("GET", "/api/v1/namespaces/default", timeout=5.0)
    finally:
        await transport.close()
        proxy.close()
    assert reply.body == b'{"kind":"Namespace"}'
    # An HTTP proxy is asked for the whole URL; the server's name is never resolved here.
    assert proxy.requests[0].startswith(b"GET http://api.invalid:6443/api/v1/namespaces/default HTTP/1.1\r\n")


def test_a_socks_proxy_is_refused_when_the_client_is_built_naming_what_is_supported() -> None:
    access = load_configuration(host="https://api.invalid:6443")
    access.proxy = "socks5://127.0.0.1:1080"
    with pytest.raises(errors.KubeConfigError, match="only http:// and https:// proxies"):
        Transport(access, "ua/1")
