"""A watch read from a real local server through the client: events in order with their kind, typed
errors, a silent connection timed out, a cut one broken, a consumer far behind holding the server back,
and a stream closed early closing its connection."""

from __future__ import annotations

import asyncio
import contextlib
import json
import socket
import threading
from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest

from mpioperator.kube import errors
from mpioperator.kube.client import KubeClient
from mpioperator.kube.list_options import ListOptions
from mpioperator.kube.resources import CONFIG_MAPS, stamp_kind
from mpioperator.kube.watch import parse_event
from mpioperator.testing.wait import async_wait_for

CHUNKED_HEAD = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n"


def chunk(data: bytes) -> bytes:
    return b"%x\r\n%s\r\n" % (len(data), data)


LAST_CHUNK = b"0\r\n\r\n"


def line(kind: str, obj: dict[str, Any]) -> bytes:
    return json.dumps({"type": kind, "object": obj}).encode() + b"\n"


def event_line(i: int, pad: int = 0) -> bytes:
    return line("ADDED", {"metadata": {"name": f"c{i}"}, "data": {"pad": "x" * pad}})


class OneAnswer:
    """Answers one connection's request with `answer(conn)`; `closed` is set once the client closed it."""

    def __init__(self, answer: Callable[[socket.socket], None]) -> None:
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.host = f"http://127.0.0.1:{self._listener.getsockname()[1]}"
        self.closed = threading.Event()
        self.done = threading.Event()
        self._answer = answer
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        with contextlib.suppress(OSError):
            conn, _ = self._listener.accept()
            with conn:
                request = b""
                while b"\r\n\r\n" not in request:
                    request += conn.recv(4096)
                try:
                    self._answer(conn)
                    conn.settimeout(30)
                    if conn.recv(1) == b"":
                        self.closed.set()
                except OSError:
                    self.closed.set()

    def close(self) -> None:
        self.done.set()
        self._listener.close()
        self._thread.join(timeout=10)


@contextlib.asynccontextmanager
async def watching(
    answer: Callable[[OneAnswer, socket.socket], None], *, inactivity: float | None = None
) -> AsyncIterator[tuple[OneAnswer, AsyncIterator[dict[str, Any]]]]:
    server: OneAnswer = OneAnswer(lambda conn: answer(server, conn))
    client = KubeClient.explicit(server.host)
    stream = client.watch(
        CONFIG_MAPS,
        "ns",
        ListOptions(resource_version="1", timeout_seconds=60, inactivity_timeout=inactivity),
    )
    try:
        async with contextlib.aclosing(stream) as events:
            yield server, events
    finally:
        await client.close()
        server.close()


async def test_events_in_pieces_that_cut_chunks_and_lines_arrive_in_order_with_kind_stamped() -> None:
    wire = CHUNKED_HEAD + b"".join(chunk(event_line(i)) for i in range(100)) + LAST_CHUNK

    def answer(server: OneAnswer, conn: socket.socket) -> None:
        for at in range(0, len(wire), 37):
            conn.sendall(wire[at : at + 37])

    async with watching(answer) as (_, events):
        seen = [event async for event in events]
    assert [e["object"]["metadata"]["name"] for e in seen] == [f"c{i}" for i in range(100)]
    assert {(e["object"]["kind"], e["object"]["apiVersion"]) for e in seen} == {("ConfigMap", "v1")}


async def test_an_error_event_raises_its_typed_error() -> None:
    expired = line("ERROR", {"kind": "Status", "code": 410, "reason": "Expired", "message": "too old"})

    def answer(server: OneAnswer, conn: socket.socket) -> None:
        conn.sendall(CHUNKED_HEAD + chunk(event_line(1)) + chunk(expired) + LAST_CHUNK)

    async with watching(answer) as (_, events):
        assert (await anext(events))["object"]["metadata"]["name"] == "c1"
        with pytest.raises(errors.Expired):
            await anext(events)


async def test_a_refused_watch_raises_the_status_of_its_answer() -> None:
    body = b'{"kind":"Status","code":403,"reason":"Forbidden","message":"configmaps is forbidden"}'

    def answer(server: OneAnswer, conn: socket.socket) -> None:
        conn.sendall(b"HTTP/1.1 403 Forbidden\r\nContent-Length: %d\r\n\r\n%s" % (len(body), body))

    async with watching(answer) as (_, events):
        with pytest.raises(errors.ApiError) as raised:
            await anext(events)
    assert raised.value.status == 403
    assert "configmaps is forbidden" in raised.value.server_message


async def test_a_silent_connection_is_reported_inactive_after_the_deadline() -> None:
    def answer(server: OneAnswer, conn: socket.socket) -> None:
        conn.sendall(CHUNKED_HEAD + chunk(event_line(1)))  # one event, then nothing, the body not ended
        server.done.wait(30)

    async with watching(answer, inactivity=0.3) as (_, events):
        assert (await anext(events))["object"]["metadata"]["name"] == "c1"
        with pytest.raises(errors.WatchInactive):
            await asyncio.wait_for(anext(events), 20)  # generous: the deadline itself is 0.3 s


async def test_a_connection_closed_mid_body_is_a_broken_stream_with_status_zero() -> None:
    def answer(server: OneAnswer, conn: socket.socket) -> None:
        conn.sendall(CHUNKED_HEAD + chunk(event_line(1)))  # no last chunk: then closed
        conn.shutdown(socket.SHUT_RDWR)

    async with watching(answer) as (_, events):
        assert (await anext(events))["object"]["metadata"]["name"] == "c1"
        with pytest.raises(errors.ApiError) as raised:
            await anext(events)
    assert raised.value.status == 0
    assert "watch stream broken" in str(raised.value)


async def test_closing_a_watch_early_closes_its_connection() -> None:
    def answer(server: OneAnswer, conn: socket.socket) -> None:
        conn.sendall(CHUNKED_HEAD + chunk(event_line(1)) + chunk(event_line(2)))

    async with watching(answer) as (server, events):
        assert (await anext(events))["object"]["metadata"]["name"] == "c1"
        await events.aclose()  # type: ignore[attr-defined]

        async def closed() -> bool:
            return server.closed.is_set()

        await async_wait_for(closed, timeout=10, what="the server to see the connection closed")


# Far more than aiohttp's buffer and the kernel's socket buffers on loopback hold together.
BEHIND_EVENTS, BEHIND_PAD = 4000, 10_000


async def test_a_consumer_far_behind_holds_the_server_back_and_still_gets_every_event_in_order() -> None:
    held_back = threading.Event()

    def answer(server: OneAnswer, conn: socket.socket) -> None:
        wire = CHUNKED_HEAD + b"".join(chunk(event_line(i, BEHIND_PAD)) for i in range(BEHIND_EVENTS))
        wire += LAST_CHUNK
        view = memoryview(wire)
        conn.settimeout(1.0)
        while view:
            try:
                sent = conn.send(view)
            except TimeoutError:
                held_back.set()  # the client stopped reading: the socket is full
                conn.settimeout(30)
                continue
            view = view[sent:]

    async with watching(answer) as (_, events):
        seen = [(await anext(events))["object"]["metadata"]["name"]]

        async def waiting() -> bool:
            return held_back.is_set()

        # The consumer takes nothing more: the server must find it cannot send the rest.
        await async_wait_for(waiting, timeout=30, what="the server to be held back")
        seen += [event["object"]["metadata"]["name"] async for event in events]
    assert seen == [f"c{i}" for i in range(BEHIND_EVENTS)]


def test_bookmark_objects_are_left_as_sent() -> None:
    event = parse_event(line("BOOKMARK", {"metadata": {"resourceVersion": "7"}}), stamp_kind(CONFIG_MAPS))
    assert event["object"] == {"metadata": {"resourceVersion": "7"}}
