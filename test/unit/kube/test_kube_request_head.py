"""No name, namespace or token can write a header or a request of its own: what would reach the wire is
refused with an error that says why (InvalidRequest, a ValueError), and a kubeconfig token's surrounding whitespace is dropped. Seen by a
loopback server that records every byte it receives and reads heads as Go's server does (a bare LF ends a
line), through the client's public calls."""

from __future__ import annotations

import contextlib
import re
import socket
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from mpioperator.kube.client import KubeClient
from mpioperator.kube.list_options import ListOptions
from mpioperator.kube.resources import CONFIG_MAPS

_HEAD_END = re.compile(rb"\r?\n\r?\n")
_REPLY = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}"


class Wire:
    """Every byte the server received, and each request it read: its head's lines and its body."""

    def __init__(self) -> None:
        self.received = bytearray()
        self.requests: list[tuple[list[str], bytes]] = []


def _serve_connection(conn: socket.socket, wire: Wire) -> None:
    pending = b""
    with conn:
        while data := conn.recv(65536):
            wire.received += data
            pending += data
            while (end := _HEAD_END.search(pending)) is not None:
                lines = pending[: end.start()].decode("latin-1").replace("\r\n", "\n").split("\n")
                fields = {
                    k.strip().lower(): v.strip() for k, _, v in (line.partition(":") for line in lines[1:])
                }
                length = int(fields.get("content-length") or 0)
                if len(pending) - end.end() < length:
                    break
                wire.requests.append((lines, pending[end.end() : end.end() + length]))
                pending = pending[end.end() + length :]
                conn.sendall(_REPLY)


@contextlib.contextmanager
def loopback() -> Iterator[tuple[str, Wire]]:
    listener = socket.create_server(("127.0.0.1", 0))
    wire = Wire()

    def accept() -> None:
        with contextlib.suppress(OSError):
            while True:
                conn, _ = listener.accept()
                threading.Thread(target=_serve_connection, args=(conn, wire), daemon=True).start()

    threading.Thread(target=accept, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{listener.getsockname()[1]}", wire
    finally:
        listener.close()


def kubeconfig(tmp_path: Path, server: str, user: dict[str, str]) -> Path:
    path = tmp_path / "config"
    path.write_text(
        yaml.safe_dump(
            {
                "clusters": [{"name": "c", "cluster": {"server": server}}],
                "users": [{"name": "u", "user": user}],
                "contexts": [{"name": "x", "context": {"cluster": "c", "user": "u"}}],
                "current-context": "x",
            }
        )
    )
    return path


INJECTED = ["x\r\nX-Injected: yes", "x\nX-Injected: yes", "x\x00y", "x y", "x\u0085y", "caf\xe9"]


@pytest.mark.parametrize("name", INJECTED, ids=["crlf", "lf", "nul", "space", "nel", "latin-1"])
async def test_a_name_that_would_write_its_own_header_is_refused_and_nothing_reaches_the_wire(
    name: str,
) -> None:
    with loopback() as (host, wire):
        client = KubeClient.explicit(host)
        try:
            await client.get(CONFIG_MAPS, "fine", "ns")  # the connection is there and works
            for call in (
                client.get(CONFIG_MAPS, name, "ns"),
                client.delete(CONFIG_MAPS, name, "ns"),
                client.patch(CONFIG_MAPS, name, {"data": {}}, "ns"),
                client.list(CONFIG_MAPS, name),
                client.create(CONFIG_MAPS, {"metadata": {"name": "a"}}, name),
            ):
                with pytest.raises(ValueError, match="cannot hold a control character"):
                    await call
            watch = client.watch(CONFIG_MAPS, name, ListOptions(resource_version="1", timeout_seconds=5))
            with pytest.raises(ValueError, match="cannot hold a control character"):
                await anext(watch)
            await client.get(CONFIG_MAPS, "after", "ns")
        finally:
            await client.close()
    assert [lines[0] for lines, _ in wire.requests] == [
        "GET /api/v1/namespaces/ns/configmaps/fine HTTP/1.1",
        "GET /api/v1/namespaces/ns/configmaps/after HTTP/1.1",
    ]
    assert b"X-Injected" not in wire.received


async def test_a_kubeconfig_token_with_a_trailing_newline_is_sent_without_it_and_the_head_stays_whole(
    tmp_path: Path,
) -> None:
    with loopback() as (host, wire):
        client = KubeClient.from_kubeconfig(kubeconfig(tmp_path, host, {"token": "abc\n"}))
        try:
            await client.create(CONFIG_MAPS, {"metadata": {"name": "a"}}, "ns")
        finally:
            await client.close()
    ((lines, body),) = wire.requests
    fields = {k.strip().lower(): v.strip() for k, _, v in (line.partition(":") for line in lines[1:])}
    assert fields["authorization"] == "Bearer abc"
    assert fields["content-type"] == "application/json"
    assert body == b'{"metadata":{"name":"a"}}'


@pytest.mark.parametrize("token", ["ab\ncd", "ab\r\nX-Injected: yes"])
async def test_a_token_with_a_newline_inside_is_refused_naming_the_header_not_the_token(
    tmp_path: Path, token: str
) -> None:
    with loopback() as (host, wire):
        client = KubeClient.from_kubeconfig(kubeconfig(tmp_path, host, {"token": token}))
        try:
            with pytest.raises(ValueError, match="header 'authorization'") as raised:
                await client.get(CONFIG_MAPS, "a", "ns")
        finally:
            await client.close()
    assert "ab" not in str(raised.value)
    assert wire.received == b""
