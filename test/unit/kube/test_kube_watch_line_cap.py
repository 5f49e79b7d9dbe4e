"""A watch line has a bound: one longer ends that watch as a broken stream (which the reflector answers by
watching again after a back-off), whether the body is chunked or not, without waiting for its end."""

from __future__ import annotations

import asyncio
import contextlib
import socket
import threading
from collections.abc import Iterator

import pytest

from mpioperator.kube import errors, framing
from mpioperator.kube.client import KubeClient
from mpioperator.kube.framing import Lines, StreamBroken
from mpioperator.kube.list_options import ListOptions
from mpioperator.kube.resources import CONFIG_MAPS

CAP = 64 * 1024
# An event that never ends: far past the cap, and no newline.
ENDLESS = b'{"type":"ADDED","object":{"kind":"ConfigMap","data":{"a":"' + b"x" * (16 * CAP)


def test_a_line_over_the_cap_is_a_broken_stream_whether_or_not_its_end_has_come() -> None:
    assert Lines(max_line=8).feed(b"12345678\n123") == [b"12345678"]
    with pytest.raises(StreamBroken, match="more than 8 bytes"):
        Lines(max_line=8).feed(b"1234\n123456789")
    with pytest.raises(StreamBroken, match="more than 8 bytes"):
        Lines(max_line=8).feed(b"123456789\n")
    lines = Lines(max_line=8)
    for piece in (b"123", b"456", b"78"):
        assert lines.feed(piece) == []
    with pytest.raises(StreamBroken):
        lines.feed(b"9")


def test_a_line_read_in_many_pieces_comes_out_whole_and_blank_lines_are_dropped() -> None:
    lines, out = Lines(), []
    wire = b'{"a":1}\n \n\r\n' + b'{"b":"' + b"y" * 100_000 + b'"}\n{"c"'
    for at in range(0, len(wire), 333):
        out += lines.feed(wire[at : at + 333])
    assert out == [b'{"a":1}', b'{"b":"' + b"y" * 100_000 + b'"}']
    assert lines.finish() == [b'{"c"']


def test_the_cap_is_far_above_the_largest_object_the_api_server_stores() -> None:
    assert framing.MAX_LINE >= 32 * 1024 * 1024


@contextlib.contextmanager
def endless_watch(*, chunked: bool) -> Iterator[str]:
    """A server whose watch answer is one line that never ends, held open until the test is over."""
    listener = socket.create_server(("127.0.0.1", 0))
    done = threading.Event()

    def serve() -> None:
        with contextlib.suppress(OSError):
            conn, _ = listener.accept()
            with conn:
                request = b""
                while b"\r\n\r\n" not in request:
                    request += conn.recv(4096)
                framing = (
                    b"Transfer-Encoding: chunked" if chunked else b"Content-Length: %d" % (2 * len(ENDLESS))
                )
                conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n" + framing + b"\r\n\r\n")
                conn.sendall(b"%x\r\n%s\r\n" % (len(ENDLESS), ENDLESS) if chunked else ENDLESS)
                done.wait(30)

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{listener.getsockname()[1]}"
    finally:
        done.set()
        listener.close()
        thread.join(timeout=5)


@pytest.mark.parametrize("chunked", [True, False], ids=["chunked", "by-length"])
async def test_a_watch_line_over_the_cap_ends_the_watch_as_a_broken_stream(
    monkeypatch: pytest.MonkeyPatch, chunked: bool
) -> None:
    monkeypatch.setattr(framing, "MAX_LINE", CAP)
    with endless_watch(chunked=chunked) as host:
        client = KubeClient.explicit(host)
        try:
            stream = client.watch(CONFIG_MAPS, "ns", ListOptions(resource_version="1", timeout_seconds=60))

            async def first_event() -> object:
                async with contextlib.aclosing(stream) as events:
                    return await anext(events)

            with pytest.raises(
                errors.ApiError, match=r"watch stream broken.*watch line of more than"
            ) as raised:
                await asyncio.wait_for(first_event(), 20)  # generous: it ends as soon as the cap is passed
            assert raised.value.status == 0
        finally:
            await client.close()
