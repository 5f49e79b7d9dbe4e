"""A watch stream read on the event loop's own thread: the socket is watched by the loop's selector and
its chunked body is taken apart here, instead of by a reader thread that hands each line to the loop.

Why (issue 22): with a reader thread, every watch event costs a thread wake-up, a GIL hand-over and the
loop's self-pipe (a write on one side, a read on the other) before the loop even sees it. Read here, an
event costs the one read of the socket that brought it.

Only a plain `200` answer whose body is chunked and not content-encoded is read this way, which is what
the API server sends for every watch; anything else goes on the reader thread (kube/watch.py).
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import socket
import ssl
from collections.abc import AsyncGenerator, Callable
from typing import TypeVar

import urllib3

from mpioperator.kube import errors
from mpioperator.kube.chunked import Dechunker, StreamBroken
from mpioperator.kube.protoapi import MAX_FRAME

T = TypeVar("T")
READ_SIZE = 256 * 1024


class Frames:
    """Protobuf watch frames: a 4-byte big-endian length, then that many bytes."""

    def __init__(self) -> None:
        self._buf = bytearray()

    def feed(self, data: bytes) -> list[bytes]:
        buf = self._buf
        buf += data
        out: list[bytes] = []
        pos = 0
        while len(buf) - pos >= 4:
            length = int.from_bytes(buf[pos : pos + 4], "big")
            if length > MAX_FRAME:
                raise StreamBroken(f"watch frame of {length} bytes")
            if len(buf) - pos - 4 < length:
                break
            out.append(bytes(buf[pos + 4 : pos + 4 + length]))
            pos += 4 + length
        del buf[:pos]
        return out

    def finish(self) -> list[bytes]:
        if self._buf:
            raise StreamBroken(f"watch stream ended inside a frame ({len(self._buf)} bytes left)")
        return []


# A watch line is one event: an object and a few bytes around it. The API server refuses request bodies
# over 3 MiB and etcd keeps values up to 1.5 MiB by default (clusters that raise --max-request-bytes stay
# near 10 MiB); an object's JSON is at most a few times what it stores. The protobuf frame cap, 64 MiB, is
# that many times over, and keeps a stream that never sends a newline from growing one line without end.
MAX_LINE = MAX_FRAME


class Lines:
    """JSON watch events, one a line; blank lines (keep-alives) are dropped. A line longer than
    `max_line` bytes is a broken stream (StreamBroken)."""

    def __init__(self, max_line: int | None = None) -> None:
        # The start of a line, as read: joined once, when its end comes. Growing one buffer instead
        # would copy a long line over and over as the buffer is reallocated.
        self._parts: list[bytes] = []
        self._size = 0
        self._max = MAX_LINE if max_line is None else max_line

    def feed(self, data: bytes) -> list[bytes]:
        # Only the new bytes are searched: what came before holds no newline.
        end = data.rfind(b"\n")
        if end < 0:
            self._parts.append(data)
            self._size += len(data)
            self._check(self._size)
            return []
        head = data if end == len(data) - 1 else data[: end + 1]
        whole = b"".join((*self._parts, head)) if self._parts else head
        rest = data[end + 1 :]
        self._parts, self._size = ([rest] if rest else []), len(rest)
        self._check(self._size)
        lines = [line for line in whole.split(b"\n") if line and not line.isspace()]
        if len(whole) > self._max:
            self._check(max(map(len, lines), default=0))
        return lines

    def _check(self, length: int) -> None:
        if length > self._max:
            raise StreamBroken(f"a watch line of more than {self._max} bytes")

    def finish(self) -> list[bytes]:
        rest = b"".join(self._parts).strip()
        self._parts, self._size = [], 0
        return [rest] if rest else []


Splitter = Frames | Lines


def loop_socket(response: urllib3.BaseHTTPResponse) -> socket.socket | None:
    """The socket to read `response`'s body from on the loop, or None where it must go to a thread."""
    if response.status != 200 or not isinstance(response, urllib3.HTTPResponse):
        return None
    headers = {k.lower(): v.lower() for k, v in response.headers.items()}
    if (
        headers.get("transfer-encoding") != "chunked"
        or headers.get("content-encoding", "identity") != "identity"
    ):
        return None
    connection = response.connection
    sock = getattr(connection, "sock", None)
    raw = getattr(response, "_fp", None)
    if not isinstance(sock, socket.socket) or raw is None or getattr(raw, "fp", None) is None:
        return None
    return sock


def _buffered(response: urllib3.HTTPResponse) -> bytes:
    """What http.client read past the headers into its buffer: the start of the body."""
    reader = response._fp.fp  # type: ignore[union-attr]
    try:
        ahead: bytes = reader.peek(1)  # the buffer as it is, or one read of the (non-blocking) socket
    except (ssl.SSLWantReadError, ssl.SSLWantWriteError, BlockingIOError, InterruptedError):
        return b""
    return bytes(reader.read1(len(ahead))) if ahead else b""


async def read_on_loop(
    response: urllib3.HTTPResponse,
    sock: socket.socket,
    splitter: Splitter,
    convert: Callable[[bytes], T],
    *,
    inactivity: float,
    buffer: int,
) -> AsyncGenerator[T, None]:
    """The events of a watch whose body is read on this loop; ends when the server ends the body.

    Raises WatchInactive after `inactivity` seconds without a byte, ApiError(0) when the connection
    breaks or the body is malformed. At most `buffer` events wait for the consumer: past that the socket
    is not read, and TCP holds the server back. Always closes `response`.
    """
    loop = asyncio.get_running_loop()
    fd = sock.fileno()
    dechunker = Dechunker()
    ready: collections.deque[bytes] = collections.deque()
    failure: list[BaseException] = []
    ended = False
    reading = False
    wake: asyncio.Future[None] | None = None
    last_byte = loop.time()
    timer: asyncio.TimerHandle | None = None

    def take(data: bytes) -> None:
        nonlocal ended
        ready.extend(splitter.feed(dechunker.feed(data)))
        if dechunker.done:
            ready.extend(splitter.finish())
            ended = True

    def pull() -> None:
        # Until the socket (and the TLS layer's own buffer) has nothing more: TLS may hold decrypted
        # bytes that the selector cannot see.
        nonlocal ended, last_byte
        try:
            while not ended and len(ready) < buffer:
                try:
                    data = sock.recv(READ_SIZE)
                except (ssl.SSLWantReadError, BlockingIOError, InterruptedError):
                    break
                if not data:
                    raise StreamBroken("the connection closed before the end of the body")
                last_byte = loop.time()
                take(data)
        except Exception as exc:  # on the loop's callback: whatever it is, the consumer hears of it
            failure.append(errors.ApiError(0, "", f"watch stream broken: {type(exc).__name__}: {exc}"))
        if ended or failure or len(ready) >= buffer:
            pause()
        signal()

    def pause() -> None:
        nonlocal reading
        if reading:
            loop.remove_reader(fd)
            reading = False

    def resume() -> None:
        nonlocal reading, last_byte
        if not reading and not ended and not failure:
            loop.add_reader(fd, pull)
            reading = True
            last_byte = loop.time()  # the deadline counts while we read, not while the consumer is behind

    def signal() -> None:
        if wake is not None and not wake.done():
            wake.set_result(None)

    def check_inactive() -> None:
        nonlocal timer
        if ended or failure:
            return
        idle = loop.time() - last_byte if reading else 0.0
        if idle >= inactivity:
            failure.append(errors.WatchInactive(f"no data for {inactivity:g} s"))
            pause()
            signal()
            return
        timer = loop.call_later(inactivity - idle, check_inactive)

    timer = loop.call_later(inactivity, check_inactive)
    try:
        sock.setblocking(False)
        try:
            take(_buffered(response))
        except StreamBroken as exc:
            failure.append(errors.ApiError(0, "", f"watch stream broken: {type(exc).__name__}: {exc}"))
        if not (ended or failure):
            pull()
            resume()
        while True:
            if ready:
                item = ready.popleft()
                if not reading and not ended and not failure and len(ready) <= buffer // 2:
                    pull()  # the consumer caught up: read again
                    resume()
                yield convert(item)
            elif failure:
                raise failure[0]
            elif ended:
                return
            else:
                wake = loop.create_future()
                await wake
                wake = None
    finally:
        if timer is not None:
            timer.cancel()
        pause()
        _close(response)


def _close(response: urllib3.HTTPResponse) -> None:
    with contextlib.suppress(Exception):
        response.close()
    with contextlib.suppress(Exception):
        response.release_conn()
