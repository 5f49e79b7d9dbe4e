"""Watch bodies read on the event loop: chunked coding undone at any split, frames and lines cut out,
and a real socket's stream delivered, timed out or broken as the reader thread would report it."""

from __future__ import annotations

import asyncio
import contextlib
import json
import socket
import threading
from collections.abc import AsyncGenerator, Callable, Iterator
from typing import Any

import pytest
import urllib3

from mpioperator.kube import errors
from mpioperator.kube.chunked import Dechunker, StreamBroken
from mpioperator.kube.loop_stream import Frames, Lines, loop_socket, read_on_loop


def chunked(*parts: bytes, trailer: bytes = b"") -> bytes:
    body = b"".join(b"%x\r\n%s\r\n" % (len(p), p) for p in parts if p)
    return body + b"0\r\n" + trailer + b"\r\n"


def frame(payload: bytes) -> bytes:
    return len(payload).to_bytes(4, "big") + payload


def test_a_chunked_body_comes_out_whole_however_its_bytes_are_split() -> None:
    wire = chunked(b"hello ", b"chunked", b" world" * 50, trailer=b"X-Trailer: yes\r\n")
    for step in (1, 2, 3, 7, 64, len(wire)):
        dechunker, out = Dechunker(), []
        for at in range(0, len(wire), step):
            assert not dechunker.done
            out.append(dechunker.feed(wire[at : at + step]))
        assert dechunker.done and b"".join(out) == b"hello chunked" + b" world" * 50


def test_chunk_extensions_are_ignored_and_garbage_is_refused() -> None:
    assert Dechunker().feed(b"5;name=value\r\nhello\r\n") == b"hello"
    with pytest.raises(StreamBroken, match="not hex"):
        Dechunker().feed(b"zz\r\nhello\r\n")
    with pytest.raises(StreamBroken, match="CRLF"):
        Dechunker().feed(b"5\r\nhelloXX")


def test_frames_are_cut_at_their_lengths_and_a_partial_one_at_the_end_is_an_error() -> None:
    frames = Frames()
    wire = frame(b"one") + frame(b"") + frame(b"three")
    assert frames.feed(wire[:5]) == []
    assert frames.feed(wire[5:]) == [b"one", b"", b"three"]
    assert frames.finish() == []
    frames.feed(frame(b"cut")[:5])
    with pytest.raises(StreamBroken, match="inside a frame"):
        frames.finish()


def test_lines_drop_blank_keep_alives_and_the_last_line_needs_no_newline() -> None:
    lines = Lines()
    assert lines.feed(b'{"a":1}\n\n  \n{"b"') == [b'{"a":1}']
    assert lines.feed(b':2}\n{"c":3}') == [b'{"b":2}']
    assert lines.finish() == [b'{"c":3}']


class ChunkedServer:
    """One HTTP/1.1 answer per connection: headers, then whatever `body` writes to the socket."""

    def __init__(self, body: Callable[[socket.socket], None]) -> None:
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port = self._listener.getsockname()[1]
        self._body = body
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        with contextlib.suppress(OSError):
            conn, _ = self._listener.accept()
            with conn:
                request = b""
                while b"\r\n\r\n" not in request:
                    request += conn.recv(4096)
                conn.sendall(
                    b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n"
                )
                self._body(conn)

    def close(self) -> None:
        self._listener.close()
        self._thread.join(timeout=5)


@contextlib.contextmanager
def served(body: Callable[[socket.socket], None]) -> Iterator[urllib3.HTTPResponse]:
    server = ChunkedServer(body)
    pool = urllib3.HTTPConnectionPool("127.0.0.1", server.port, retries=False)
    try:
        response = pool.urlopen("GET", "/watch", preload_content=False, timeout=urllib3.Timeout(5, 5))
        assert isinstance(response, urllib3.HTTPResponse)
        yield response
    finally:
        pool.close()
        server.close()


def events(
    response: urllib3.HTTPResponse, *, inactivity: float = 5.0, buffer: int = 256
) -> AsyncGenerator[Any, None]:
    sock = loop_socket(response)
    assert sock is not None
    return read_on_loop(response, sock, Lines(), json.loads, inactivity=inactivity, buffer=buffer)


async def collect(stream: AsyncGenerator[Any, None], seen: list[int]) -> None:
    async for event in stream:
        seen.append(event["object"]["i"])


def event_line(i: int) -> bytes:
    return json.dumps({"type": "ADDED", "object": {"i": i}}).encode() + b"\n"


async def test_events_written_in_any_pieces_arrive_in_order_until_the_last_chunk() -> None:
    wire = chunked(*(event_line(i) for i in range(100)))

    def body(conn: socket.socket) -> None:
        for at in range(0, len(wire), 37):  # pieces that cut chunk headers, payloads and lines
            conn.sendall(wire[at : at + 37])

    with served(body) as response:
        seen = [event["object"]["i"] async for event in events(response)]
    assert seen == list(range(100))
    assert response.closed


@pytest.mark.parametrize("buffer", [1, 4])
async def test_a_consumer_behind_by_more_than_the_buffer_still_gets_every_event_in_order(buffer: int) -> None:
    wire = chunked(*(event_line(i) for i in range(300)))
    with served(lambda conn: conn.sendall(wire)) as response:
        seen = []
        async for event in events(response, buffer=buffer):
            seen.append(event["object"]["i"])
            await asyncio.sleep(0)
    assert seen == list(range(300))


async def test_a_silent_connection_is_reported_inactive_after_the_deadline() -> None:
    quiet = threading.Event()

    def body(conn: socket.socket) -> None:
        conn.sendall(chunked(event_line(1))[:-5])  # one event, then nothing, the body not ended
        quiet.wait(10)

    with served(body) as response:
        seen: list[int] = []
        with pytest.raises(errors.WatchInactive):
            await collect(events(response, inactivity=0.3), seen)
        quiet.set()
    assert seen == [1]


async def test_a_connection_closed_mid_body_is_a_broken_stream_with_status_zero() -> None:
    def body(conn: socket.socket) -> None:
        conn.sendall(b"%x\r\n%s\r\n" % (len(event_line(1)), event_line(1)))  # no last chunk: then closed

    with served(body) as response:
        seen: list[int] = []
        with pytest.raises(errors.ApiError) as raised:
            await collect(events(response), seen)
    assert seen == [1] and raised.value.status == 0
    assert "closed before the end" in str(raised.value)


async def test_an_answer_that_is_not_chunked_is_left_to_the_reader_thread() -> None:
    server = socket.create_server(("127.0.0.1", 0))

    def serve() -> None:
        conn, _ = server.accept()
        with conn:
            conn.recv(4096)
            conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n{}")

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    pool = urllib3.HTTPConnectionPool("127.0.0.1", server.getsockname()[1], retries=False)
    try:
        response = pool.urlopen("GET", "/", preload_content=False)
        assert loop_socket(response) is None
        response.close()
    finally:
        pool.close()
        server.close()
        thread.join(timeout=5)
