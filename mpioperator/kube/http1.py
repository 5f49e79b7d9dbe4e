"""A lean HTTP/1.1 client for the API server's unary calls: one request, one whole answer, on kept-alive
connections of our own.

Why (issue 22): urllib3 and http.client spend most of a small request's CPU in their own Python (header
objects, the email parser for response headers, timeout and retry objects, response wrappers). Measured
against the local API server, a GET costs 110-140 us of client CPU here against 500-750 us through the
urllib3 pool, and an operator sends 27 such requests per MPIJob. Watches and followed logs, which stream,
and any connection through a proxy still go through urllib3 (kube/transport.py).

What it implements is what the API server speaks: Content-Length and chunked bodies, keep-alive, a
connection closed by the server between requests. It retries in one case only, as Go's transport does: a
GET or HEAD on a kept-alive connection that the server closed as the request went out, before a byte of the
answer, is sent once more on a new connection. Every other failure is the work queue's to retry.

A call is bounded as a whole, not per read: its timeout runs from sending the request to the last byte of
the answer, and a body over MAX_BODY fails it. Either closes the connection.
"""

from __future__ import annotations

import collections
import contextlib
import select
import socket
import ssl
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from mpioperator.kube.chunked import Dechunker, StreamBroken

READ_SIZE = 256 * 1024
MAX_HEAD = 64 * 1024
# The largest answer the operator reads is its first list of pods, served whole from the API server's
# watch cache: a few KiB a pod, some hundreds of MiB at the 150,000 pods Kubernetes supports in a cluster
# (Secrets, which can be far larger, are always listed in pages of about 16 MiB). Past 1 GiB, the
# operator Deployment's memory limit, no answer could be held and decoded anyway; the cap turns a
# runaway body into a failed call instead of growing until the process runs out of memory.
MAX_BODY = 1 << 30
NO_BODY = frozenset((204, 304))
# Methods that change nothing on the server, so sending one again cannot do anything twice.
REPLAYABLE = frozenset(("GET", "HEAD"))


class HttpError(Exception):
    """The connection failed or the answer is not HTTP/1.1 we can read."""


@dataclass(frozen=True, slots=True)
class Reply:
    status: int
    headers: dict[str, str]
    body: bytes


class ClosedWithoutAnswer(HttpError):
    """The server closed the connection before the first byte of an answer."""


class BodyTooLarge(HttpError):
    """The answer's body is over MAX_BODY."""


class _Connection:
    __slots__ = ("ahead", "deadline", "heard", "reused", "sock")

    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
        self.ahead = b""  # bytes read past the end of the last answer (none from a well-behaved server)
        self.reused = False  # it carried an earlier request
        self.heard = False  # a byte of the current answer has arrived
        self.deadline: float | None = None  # time.monotonic() by which the current answer must be read

    def recv(self) -> bytes:
        if self.ahead:
            data, self.ahead = self.ahead, b""
        else:
            if self.deadline is not None:
                # The socket's timeout bounds one read only: a server sending a byte at a time would
                # hold the call for ever. Each read may wait only for what is left of the call's time.
                left = self.deadline - time.monotonic()
                if left <= 0:
                    raise TimeoutError("the whole answer did not arrive within the call's timeout")
                self.sock.settimeout(left)
            data = self.sock.recv(READ_SIZE)
        self.heard = self.heard or bool(data)
        return data

    def dropped(self) -> bool:
        """An idle connection that has something to read was closed by the server (or sent garbage)."""
        if self.ahead:
            return True
        try:
            poller = select.poll()  # not select.select, which refuses descriptors past 1023
            poller.register(self.sock, select.POLLIN)
            return bool(poller.poll(0))
        except (OSError, ValueError):
            return True

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self.sock.close()


class Http1Pool:
    """Connections to one server, kept alive between requests; safe to use from many threads."""

    def __init__(
        self,
        host: str,
        port: int,
        *,
        tls: Callable[[], ssl.SSLContext] | None,
        server_hostname: str | None = None,
        socket_options: list[tuple[int, int, int]] | None = None,
        maxsize: int = 16,
        connect: Callable[[tuple[str, int], float | None], socket.socket] = socket.create_connection,
    ) -> None:
        self._address = (host, port)
        # Asked at every new connection: a missing CA file fails a request, not start-up (as in urllib3),
        # and the factory may hand out a new context when the certificate files are rotated.
        self._make_tls = tls
        self._server_hostname = server_hostname or host
        self._options = socket_options or []
        self._maxsize = maxsize
        self._connect = connect
        default_port = 443 if tls is not None else 80
        host_header = f"[{host}]" if ":" in host else host
        self._host_header = host_header if port == default_port else f"{host_header}:{port}"
        # deque's append and pop are atomic: no lock is needed to hand connections between threads.
        self._idle: collections.deque[_Connection] = collections.deque()

    def request(
        self,
        method: str,
        target: str,
        headers: Mapping[str, str],
        body: bytes | None,
        timeout: float | None,
    ) -> Reply:
        wire = self._encode(method, target, headers, body)
        conn = self._take(timeout)
        try:
            return self._exchange(conn, wire, method, timeout)
        except HttpError as exc:
            if not (conn.reused and method in REPLAYABLE and _closed_unanswered(conn, exc)):
                raise
        # The server's idle timeout closed the connection as the request went out (the `dropped` check
        # before it cannot see a close still in flight): nothing was answered, so nothing was done.
        return self._exchange(self._connect_new(timeout), wire, method, timeout)

    def _exchange(self, conn: _Connection, wire: bytes, method: str, timeout: float | None) -> Reply:
        conn.heard = False
        conn.deadline = None if timeout is None else time.monotonic() + timeout
        try:
            conn.sock.settimeout(timeout)
            conn.sock.sendall(wire)
            reply, reusable = _read_reply(conn, method)
        except (OSError, StreamBroken, HttpError, ValueError) as exc:
            conn.close()
            raise HttpError(f"{type(exc).__name__}: {exc}") from exc
        if reusable and len(self._idle) < self._maxsize:
            conn.reused = True
            self._idle.append(conn)
        else:
            conn.close()
        return reply

    def close(self) -> None:
        while self._idle:
            self._idle.pop().close()

    def _take(self, timeout: float | None) -> _Connection:
        while True:
            try:
                conn = self._idle.pop()
            except IndexError:
                break
            if not conn.dropped():
                return conn
            conn.close()
        return self._connect_new(timeout)

    def _connect_new(self, timeout: float | None) -> _Connection:
        try:
            sock = self._connect(self._address, timeout)
        except OSError as exc:
            raise HttpError(f"{type(exc).__name__}: {exc}") from exc
        try:
            for level, option, value in self._options:
                sock.setsockopt(level, option, value)
            if self._make_tls is not None:
                sock = self._make_tls().wrap_socket(sock, server_hostname=self._server_hostname)
        except OSError as exc:  # ssl.SSLError and a missing CA file included
            sock.close()
            raise HttpError(f"{type(exc).__name__}: {exc}") from exc
        return _Connection(sock)

    def _encode(self, method: str, target: str, headers: Mapping[str, str], body: bytes | None) -> bytes:
        lines = [f"{method} {target} HTTP/1.1", f"Host: {self._host_header}"]
        lines += [f"{name}: {value}" for name, value in headers.items()]
        if body is not None or method in ("POST", "PUT", "PATCH"):
            lines.append(f"Content-Length: {len(body or b'')}")
        head = ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")
        return head + body if body else head


def _read_reply(conn: _Connection, method: str) -> tuple[Reply, bool]:
    """The answer on `conn`, and whether the connection can carry another request."""
    while True:
        status, version, headers, data = _read_head(conn)
        if not 100 <= status < 200:
            break
        conn.ahead = data  # an interim answer (100 Continue): the real one follows
    lowered = {name.lower(): value for name, value in headers.items()}
    connection = lowered.get("connection", "").lower()
    reusable = connection != "close" and (version == "HTTP/1.1" or connection == "keep-alive")
    if method == "HEAD" or status in NO_BODY:
        body, rest = b"", data
    elif "chunked" in lowered.get("transfer-encoding", "").lower():
        body, rest = _read_chunked(conn, data)
    elif (length := lowered.get("content-length")) is not None:
        body, rest = _read_length(conn, data, _within_cap(int(length)))
    else:
        body, rest, reusable = _read_to_end(conn, data), b"", False
    conn.ahead = rest
    return Reply(status, headers, body), reusable and not rest


def _read_head(conn: _Connection) -> tuple[int, str, dict[str, str], bytes]:
    data = b""
    while (end := data.find(b"\r\n\r\n")) < 0:
        if len(data) > MAX_HEAD:
            raise HttpError("response head too long")
        more = conn.recv()
        if not more:
            error = ClosedWithoutAnswer if not data else HttpError
            raise error("the server closed the connection without an answer")
        data += more
    lines = data[:end].decode("latin-1").split("\r\n")
    version, _, rest = lines[0].partition(" ")
    if not version.startswith("HTTP/1."):
        raise HttpError(f"not an HTTP/1.x status line: {lines[0][:80]!r}")
    status = int(rest[:3])
    headers: dict[str, str] = {}
    for line in lines[1:]:
        name, colon, value = line.partition(":")
        if not colon:
            continue
        name, value = name.strip(), value.strip()
        # Repeated fields are joined as one list-valued field, as urllib3 and http.client show them.
        headers[name] = f"{headers[name]}, {value}" if name in headers else value
    return status, version, headers, data[end + 4 :]


def _read_length(conn: _Connection, data: bytes, length: int) -> tuple[bytes, bytes]:
    parts, got = [data], len(data)
    while got < length:
        more = conn.recv()
        if not more:
            raise HttpError(f"the connection closed after {got} of {length} body bytes")
        parts.append(more)
        got += len(more)
    whole = b"".join(parts)
    return whole[:length], whole[length:]


def _read_chunked(conn: _Connection, data: bytes) -> tuple[bytes, bytes]:
    dechunker = Dechunker()
    parts = [dechunker.feed(data)]
    got = _within_cap(len(parts[0]))
    while not dechunker.done:
        more = conn.recv()
        if not more:
            raise HttpError("the connection closed inside a chunked body")
        parts.append(dechunker.feed(more))
        got = _within_cap(got + len(parts[-1]))
    return b"".join(parts), dechunker.rest()


def _read_to_end(conn: _Connection, data: bytes) -> bytes:
    parts, got = [data], _within_cap(len(data))
    while more := conn.recv():
        parts.append(more)
        got = _within_cap(got + len(more))
    return b"".join(parts)


def _within_cap(size: int) -> int:
    if size > MAX_BODY:
        raise BodyTooLarge(f"the answer's body is over the cap of {MAX_BODY} bytes")
    return size


def _closed_unanswered(conn: _Connection, error: HttpError) -> bool:
    """Whether `error` is the server closing or resetting the connection before any answer: not a
    timeout, nor an answer cut short."""
    cause = error.__cause__
    closed = isinstance(cause, (ClosedWithoutAnswer, ConnectionError, ssl.SSLEOFError))
    return closed and not conn.heard
