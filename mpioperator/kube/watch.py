"""A watch stream (or a followed pod log) read from its aiohttp response on the event loop, frame by frame
(protobuf), line by line (JSON) or line by line as text (a log).

The body is read as it arrives and cut in one pass (kube/framing.py). aiohttp's buffer is the only one:
while the consumer has not asked for the next event nothing is read from the response, and once its
buffer is full aiohttp stops reading the socket, so TCP holds back the API server instead of the events
piling up in memory.

The read deadline is the inactivity deadline: a connection that delivers nothing (not even a bookmark)
for that long is presumed dead and reported as WatchInactive, never left hanging. It runs only while
the socket is read: a consumer that is behind does not time its own stream out.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, Callable
from typing import Any, TypeVar

import aiohttp
import orjson

from mpioperator.kube import errors
from mpioperator.kube.framing import Frames, Lines, LogLines, Splitter, StreamBroken
from mpioperator.kube.transport import TRANSPORT_ERRORS, BodyTooLarge, error_of, header_dict, read_capped

T = TypeVar("T")


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


def stream_events(
    response: aiohttp.ClientResponse,
    stamp: Callable[[dict[str, Any]], None],
    loads: Callable[[bytes], dict[str, Any]] | None = None,
) -> AsyncGenerator[dict[str, Any], None]:
    """Events of one JSON watch response; ends when the server ends the stream. Always closes `response`."""
    return read_stream(response, Lines(), lambda line: parse_event(line, stamp, loads))


def stream_frames(
    response: aiohttp.ClientResponse,
    stamp: Callable[[dict[str, Any]], None],
    loads: Callable[[bytes], dict[str, Any]],
) -> AsyncGenerator[dict[str, Any], None]:
    """Events of one protobuf watch response, each frame decoded by `loads`; as `stream_events`."""
    return read_stream(response, Frames(), lambda frame: parse_event(frame, stamp, loads))


def stream_lines(response: aiohttp.ClientResponse) -> AsyncGenerator[str, None]:
    """The text lines of a streamed response (a followed pod log), blank ones included, each with its
    newline; ends when the server ends the stream. Always closes `response`."""
    return read_stream(response, LogLines(), lambda line: line.decode(errors="replace"))


async def read_stream(
    response: aiohttp.ClientResponse, splitter: Splitter, convert: Callable[[bytes], T]
) -> AsyncGenerator[T, None]:
    """`convert` of each unit `splitter` cuts from the body of `response`, as they arrive.

    A refusal (any status but 200) raises its typed error; no byte within the read deadline raises
    WatchInactive; a broken connection or a malformed body raises ApiError(0)."""
    try:
        if response.status != 200:
            try:
                body = await read_capped(response)
            except (*TRANSPORT_ERRORS, BodyTooLarge) as exc:
                body = f"{type(exc).__name__}: {exc}".encode()
            raise error_of(response.status, header_dict(response.headers), body)
        content = response.content
        while True:
            try:
                data = await content.readany()
                units = splitter.feed(data) if data else splitter.finish()
            except TimeoutError as exc:  # aiohttp's ServerTimeoutError: the read deadline passed
                raise errors.WatchInactive(f"{type(exc).__name__}: {exc}") from exc
            except (*TRANSPORT_ERRORS, StreamBroken) as exc:
                raise errors.ApiError(0, "", f"watch stream broken: {type(exc).__name__}: {exc}") from exc
            for unit in units:
                yield convert(unit)
            if not data:
                return
    finally:
        # A body read to its end leaves a connection fit for the next request; any other is closed.
        if response.content.is_eof():
            response.release()
        else:
            response.close()
