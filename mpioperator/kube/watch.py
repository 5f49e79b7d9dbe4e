"""A watch stream (or a followed pod log) read on its own thread and handed to the event loop, line by line
(JSON, a log) or frame by frame (protobuf).

The socket read timeout is the inactivity deadline: a connection that delivers nothing (not even a
bookmark) for that long is presumed dead and reported as WatchInactive, never left hanging.

The hand-over is bounded: the reader thread may run at most `buffer` lines ahead of the loop, then it
waits for the loop to take one. A loop that falls behind (a burst of large pods, a busy sync) so holds
back the reader, and TCP holds back the API server, instead of the lines piling up in memory.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import threading
from collections.abc import AsyncGenerator, Callable, Iterable, Iterator
from typing import Any, TypeVar

import orjson
import urllib3

from mpioperator.kube import errors
from mpioperator.kube.loop_stream import READ_SIZE, Frames, Lines, Splitter, loop_socket, read_on_loop
from mpioperator.kube.protoapi import read_frames
from mpioperator.kube.transport import error_of

_END = object()
_JOIN_TIMEOUT = 5.0
# Lines read but not yet taken by the loop, per watch: about 2.5 MB of 10 kB pods.
BUFFERED_LINES = 256
_ids = itertools.count(1)
T = TypeVar("T")


class _Failure:
    def __init__(self, exc: BaseException) -> None:
        self.exc = exc


def _log_lines(response: urllib3.BaseHTTPResponse) -> Iterator[bytes]:
    return iter(response)


def _split(response: urllib3.BaseHTTPResponse, lines: Lines) -> Iterator[bytes]:
    """Watch lines cut by the same splitter as on the loop, so a line has the same bound on either path."""
    for data in response.stream(READ_SIZE):
        yield from lines.feed(data)
    yield from lines.finish()


def _reader(
    response: urllib3.BaseHTTPResponse,
    deliver: Callable[[object], None],
    stopped: threading.Event,
    room: threading.Semaphore,
    chunks: Callable[[], Iterable[bytes]],
) -> None:
    try:
        if response.status != 200:
            deliver(_Failure(error_of(response.status, dict(response.headers), response.data)))
            return
        for chunk in chunks():
            if stopped.is_set():
                return
            room.acquire()  # back-pressure: wait while the loop has `buffer` chunks not yet taken
            if stopped.is_set():
                return
            deliver(chunk)
        deliver(_END)
    except (urllib3.exceptions.ReadTimeoutError, TimeoutError) as exc:
        if not stopped.is_set():
            deliver(_Failure(errors.WatchInactive(str(exc))))
    except Exception as exc:
        # Includes ProtocolError/IncompleteRead when the server or a proxy cuts the stream.
        if not stopped.is_set():
            deliver(_Failure(errors.ApiError(0, "", f"watch stream broken: {type(exc).__name__}: {exc}")))
    finally:
        with contextlib.suppress(Exception):
            response.release_conn()


def parse_event(
    line: bytes,
    stamp: Callable[[dict[str, Any]], None],
    loads: Callable[[bytes], dict[str, Any]] | None = None,
) -> dict[str, Any]:
    """One watch line as an event dict, parsed by `loads` (whole by default); an ERROR event raises
    its typed error (410 -> Expired)."""
    event: dict[str, Any] = orjson.loads(line) if loads is None else loads(line)
    if event.get("type") == "ERROR":
        status = event.get("object") or {}
        raise errors.error_from_status(int(status.get("code") or 500), status)
    obj = event.get("object")
    if isinstance(obj, dict) and event.get("type") != "BOOKMARK":
        stamp(obj)
    return event


def _close(response: urllib3.BaseHTTPResponse) -> None:
    # shutdown() interrupts a read blocked in the reader thread, so it exits now, not at the next event.
    with contextlib.suppress(Exception):
        response.shutdown()
    with contextlib.suppress(Exception):
        response.close()


async def open_stream(open_response: Callable[[], urllib3.BaseHTTPResponse]) -> urllib3.BaseHTTPResponse:
    """Run the blocking request on a thread; the response body is left unread for `stream_events`."""
    loop = asyncio.get_running_loop()
    pending = loop.run_in_executor(None, open_response)
    try:
        return await asyncio.shield(pending)
    except asyncio.CancelledError:
        # The request still completes on its thread; close what it returns rather than leak it.
        pending.add_done_callback(lambda f: None if f.cancelled() or f.exception() else _close(f.result()))
        raise


def stream_events(
    response: urllib3.BaseHTTPResponse,
    stamp: Callable[[dict[str, Any]], None],
    loads: Callable[[bytes], dict[str, Any]] | None = None,
    *,
    buffer: int = BUFFERED_LINES,
    inactivity: float | None = None,
) -> AsyncGenerator[dict[str, Any], None]:
    """Events of one watch response; ends when the server closes the stream. Always closes `response`.

    Given the `inactivity` deadline, a chunked answer is read on the event loop (kube/loop_stream.py);
    otherwise on a reader thread, whose socket keeps the deadline the request was opened with."""

    def convert(line: bytes) -> dict[str, Any]:
        return parse_event(line, stamp, loads)

    lines = Lines()
    return _on_loop_or_thread(response, convert, buffer, inactivity, lines, lambda: _split(response, lines))


def stream_frames(
    response: urllib3.BaseHTTPResponse,
    stamp: Callable[[dict[str, Any]], None],
    loads: Callable[[bytes], dict[str, Any]],
    *,
    buffer: int = BUFFERED_LINES,
    inactivity: float | None = None,
) -> AsyncGenerator[dict[str, Any], None]:
    """Events of one protobuf watch response, each frame decoded by `loads`; as `stream_events`."""

    def convert(frame: bytes) -> dict[str, Any]:
        return parse_event(frame, stamp, loads)

    return _on_loop_or_thread(
        response, convert, buffer, inactivity, Frames(), lambda: read_frames(response.read)
    )


def _on_loop_or_thread(
    response: urllib3.BaseHTTPResponse,
    convert: Callable[[bytes], T],
    buffer: int,
    inactivity: float | None,
    splitter: Splitter,
    chunks: Callable[[], Iterable[bytes]],
) -> AsyncGenerator[T, None]:
    """On the loop when the answer allows it and a deadline is given; else on a reader thread."""
    sock = loop_socket(response) if inactivity is not None else None
    if sock is not None and inactivity is not None and isinstance(response, urllib3.HTTPResponse):
        return read_on_loop(response, sock, splitter, convert, inactivity=inactivity, buffer=buffer)
    return _stream(response, convert, buffer, chunks)


def stream_lines(
    response: urllib3.BaseHTTPResponse, *, buffer: int = BUFFERED_LINES
) -> AsyncGenerator[str, None]:
    """The text lines of a streamed response (a followed pod log), blank ones included, each with its
    newline; ends when the server closes the stream. Always closes `response`."""
    return _stream(response, lambda line: line.decode(errors="replace"), buffer, lambda: _log_lines(response))


async def _stream(
    response: urllib3.BaseHTTPResponse,
    convert: Callable[[bytes], T],
    buffer: int,
    chunks: Callable[[], Iterable[bytes]],
) -> AsyncGenerator[T, None]:
    loop = asyncio.get_running_loop()
    # Unbounded itself: `room` bounds the lines in it, and the end or a failure always finds a place.
    queue: asyncio.Queue[object] = asyncio.Queue()
    stopped = threading.Event()
    room = threading.Semaphore(buffer)

    def deliver(item: object) -> None:
        with contextlib.suppress(RuntimeError):  # the loop may be closing
            loop.call_soon_threadsafe(queue.put_nowait, item)

    thread = threading.Thread(
        target=_reader,
        args=(response, deliver, stopped, room, chunks),
        name=f"kube-watch-{next(_ids)}",
        daemon=True,
    )
    thread.start()
    try:
        while True:
            item = await queue.get()
            if item is _END:
                return
            if isinstance(item, _Failure):
                raise item.exc
            assert isinstance(item, bytes)
            room.release()
            yield convert(item)
    finally:
        stopped.set()
        room.release()  # a reader waiting for room wakes, sees the stop and ends
        _close(response)
        with contextlib.suppress(RuntimeError):  # the default executor is gone at loop shutdown
            await loop.run_in_executor(None, thread.join, _JOIN_TIMEOUT)
