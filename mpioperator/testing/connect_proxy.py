"""Loopback stand-ins for what sits between a client and its API server in tests: an HTTP CONNECT proxy
that records every tunnel it opens, and a TLS server that records the header fields of every request.

The proxy can route a name to another address (`routes`): a server named `kube.test` or `10.96.0.1`
that only the proxy knows how to reach proves that a request really went through it."""

from __future__ import annotations

import contextlib
import select
import socket
import socketserver
import ssl
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import orjson

HEAD_LIMIT = 64 * 1024


@dataclass(frozen=True)
class Tunnel:
    target: str  # host:port, as the client asked for it
    headers: dict[str, str] = field(default_factory=dict)


class _ProxyHandler(socketserver.BaseRequestHandler):
    server: ConnectProxy

    def handle(self) -> None:
        client: socket.socket = self.request
        head = b""
        while b"\r\n\r\n" not in head:
            data = client.recv(4096)
            if not data or len(head) > HEAD_LIMIT:
                return
            head += data
        lines = head.split(b"\r\n\r\n", 1)[0].decode("latin-1").split("\r\n")
        method, target, _ = lines[0].split(" ", 2)
        headers = dict(line.split(": ", 1) for line in lines[1:] if ": " in line)
        if method != "CONNECT":
            client.sendall(b"HTTP/1.1 405 Method Not Allowed\r\nContent-Length: 0\r\n\r\n")
            return
        self.server.tunnels.append(Tunnel(target, headers))
        host, port = target.rsplit(":", 1)
        host = self.server.routes.get(host.strip("[]"), host.strip("[]"))
        try:
            upstream = socket.create_connection((host, int(port)), timeout=10)
        except OSError:
            client.sendall(b"HTTP/1.1 502 Bad Gateway\r\nContent-Length: 0\r\n\r\n")
            return
        with upstream:
            client.sendall(b"HTTP/1.1 200 Connection established\r\n\r\n")
            _pipe(client, upstream)


def _pipe(a: socket.socket, b: socket.socket) -> None:
    peers = {a: b, b: a}
    while True:
        # A TLS socket may hold decrypted bytes that select() cannot see.
        buffered = [s for s in peers if isinstance(s, ssl.SSLSocket) and s.pending()]
        readable = buffered or select.select(list(peers), [], [], 30)[0]
        if not readable:
            return
        for sock in readable:
            data = sock.recv(65536)
            if not data:
                return
            peers[sock].sendall(data)


class ConnectProxy(socketserver.ThreadingTCPServer):
    """`http://127.0.0.1:{port}`, or `https://` given `tls` (the proxy's own certificate); `tunnels` lists
    what went through it, in order."""

    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, routes: dict[str, str] | None = None, tls: ssl.SSLContext | None = None) -> None:
        super().__init__(("127.0.0.1", 0), _ProxyHandler)
        if tls is not None:
            self.socket = tls.wrap_socket(self.socket, server_side=True)
        self.scheme = "https" if tls is not None else "http"
        self.routes = routes or {}
        self.tunnels: list[Tunnel] = []

    @property
    def url(self) -> str:
        return f"{self.scheme}://127.0.0.1:{self.server_address[1]}"

    def handle_error(self, request: object, client_address: object) -> None:
        pass  # a client that refuses the proxy's certificate is the test's to see, not the server's to print


class _RecordingHandler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: HeaderRecordingServer

    def do_GET(self) -> None:
        # Every field as sent, repeated names included, in order.
        self.server.requests.append((self.path, list(self.headers.raw_items())))
        body = orjson.dumps({"kind": "Namespace", "apiVersion": "v1", "metadata": {"name": "seen"}})
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: object) -> None:
        pass


class HeaderRecordingServer(ThreadingHTTPServer):
    """Answers every GET with a Namespace; `requests` holds each request's path and header fields."""

    daemon_threads = True

    def __init__(self, tls: ssl.SSLContext | None = None) -> None:
        super().__init__(("127.0.0.1", 0), _RecordingHandler)
        if tls is not None:
            self.socket = tls.wrap_socket(self.socket, server_side=True)
        self.requests: list[tuple[str, list[tuple[str, str]]]] = []

    @property
    def port(self) -> int:
        return int(self.server_address[1])

    def handle_error(self, request: object, client_address: object) -> None:
        pass  # a client that gives up mid-handshake is the test's to see, not the server's to print


@contextlib.contextmanager
def serving(server: socketserver.BaseServer) -> Iterator[None]:
    thread = threading.Thread(target=server.serve_forever, name="test-server", daemon=True)
    thread.start()
    try:
        yield
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)
