from __future__ import annotations

import asyncio
import contextlib
import json
import sys
import threading
from collections.abc import Iterator
from typing import Any, cast

import pytest
import urllib3

from mpioperator.kube import errors
from mpioperator.kube.client import stamp_kind
from mpioperator.kube.resources import CONFIG_MAPS
from mpioperator.kube.watch import open_stream, parse_event, stream_events
from mpioperator.testing.wait import async_wait_for


class FakeResponse:
    """Lines, then either the end, an exception, or a read blocked until shutdown()."""

    def __init__(
        self,
        lines: list[bytes],
        *,
        status: int = 200,
        then: BaseException | None = None,
        block: bool = False,
        data: bytes = b"",
    ) -> None:
        self.status = status
        self.headers: dict[str, str] = {}
        self.data = data
        self._lines = lines
        self._then = then
        self._unblock = threading.Event()
        self._block = block
        self.closed = False
        self.released = False

    def __iter__(self) -> Iterator[bytes]:
        yield from self._lines
        if self._block:
            self._unblock.wait()
            raise urllib3.exceptions.ProtocolError("connection shut down")
        if self._then is not None:
            raise self._then

    def stream(self, amt: int) -> Iterator[bytes]:
        return iter(self)

    def shutdown(self) -> None:
        self._unblock.set()

    def close(self) -> None:
        self.closed = True

    def release_conn(self) -> None:
        self.released = True


def line(kind: str, obj: dict[str, Any]) -> bytes:
    return json.dumps({"type": kind, "object": obj}).encode() + b"\n"


def events_of(response: FakeResponse) -> Any:
    return stream_events(cast(urllib3.BaseHTTPResponse, response), stamp_kind(CONFIG_MAPS))


async def drain(response: FakeResponse, seen: list[str] | None = None) -> None:
    async for event in events_of(response):
        if seen is not None:
            seen.append(event["type"])


def watch_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name.startswith("kube-watch-")]


async def test_events_arrive_in_order_with_kind_stamped_until_the_server_ends_the_stream() -> None:
    response = FakeResponse(
        [
            line("ADDED", {"metadata": {"name": "a"}}),
            b"\n",
            line("MODIFIED", {"metadata": {"name": "a"}}),
            line("DELETED", {"metadata": {"name": "a"}}),
        ]
    )
    got = [event async for event in events_of(response)]
    assert [e["type"] for e in got] == ["ADDED", "MODIFIED", "DELETED"]
    assert all(e["object"]["kind"] == "ConfigMap" for e in got)
    assert response.closed


async def test_an_error_event_raises_its_typed_error() -> None:
    gone = {"kind": "Status", "code": 410, "reason": "Expired", "message": "too old resource version"}
    response = FakeResponse([line("ADDED", {"metadata": {}}), line("ERROR", gone)])
    seen: list[str] = []
    with pytest.raises(errors.Expired, match="too old"):
        await drain(response, seen)
    assert seen == ["ADDED"]


async def test_a_read_timeout_is_reported_as_watch_inactive() -> None:
    timeout = urllib3.exceptions.ReadTimeoutError(cast(Any, None), "/x", "Read timed out.")
    with pytest.raises(errors.WatchInactive):
        await drain(FakeResponse([], then=timeout))


async def test_a_broken_stream_is_a_transport_error_with_status_zero() -> None:
    broken = urllib3.exceptions.ProtocolError("IncompleteRead")
    with pytest.raises(errors.ApiError) as caught:
        await drain(FakeResponse([line("ADDED", {})], then=broken))
    assert caught.value.status == 0


async def test_a_refused_watch_raises_the_status_of_its_answer() -> None:
    body = json.dumps({"kind": "Status", "code": 403, "reason": "Forbidden", "message": "no"}).encode()
    with pytest.raises(errors.Forbidden):
        await drain(FakeResponse([], status=403, data=body))


async def test_closing_early_shuts_the_stream_and_ends_its_thread() -> None:
    response = FakeResponse([line("ADDED", {"metadata": {"name": "a"}})], block=True)
    async with contextlib.aclosing(events_of(response)) as events:
        async for _ in events:
            break
        assert watch_threads()
    assert response.closed
    assert watch_threads() == []


def test_bookmark_objects_are_left_as_sent() -> None:
    event = parse_event(line("BOOKMARK", {"metadata": {"resourceVersion": "7"}}), stamp_kind(CONFIG_MAPS))
    assert event["object"] == {"metadata": {"resourceVersion": "7"}}


async def test_a_watch_cancelled_while_opening_closes_the_response_it_gets_later() -> None:
    response = FakeResponse([])
    requested, answer = threading.Event(), threading.Event()

    def slow_open() -> urllib3.BaseHTTPResponse:
        requested.set()
        answer.wait()
        return cast(urllib3.BaseHTTPResponse, response)

    opening = asyncio.ensure_future(open_stream(slow_open))
    await async_wait_for(lambda: asyncio.sleep(0, requested.is_set()), timeout=5, what="request sent")
    opening.cancel()
    with pytest.raises(asyncio.CancelledError):
        await opening
    answer.set()
    await async_wait_for(lambda: asyncio.sleep(0, response.closed), timeout=5, what="late response closed")


class CountingResponse(FakeResponse):
    """Counts the lines the reader thread has read off the connection."""

    def __init__(self, lines: list[bytes], *, then: BaseException | None = None) -> None:
        super().__init__(lines, then=then)
        self.read = 0

    def __iter__(self) -> Iterator[bytes]:
        for raw in super().__iter__():
            self.read += 1
            yield raw


async def test_a_slow_consumer_holds_the_reader_back_by_the_buffer() -> None:
    """The reader runs at most `buffer` lines ahead of what the loop has taken (plus the one it holds)."""
    buffer, total = 4, 200
    response = CountingResponse([line("ADDED", {"metadata": {"name": f"p{i}"}}) for i in range(total)])
    taken = 0
    events = stream_events(cast(urllib3.BaseHTTPResponse, response), stamp_kind(CONFIG_MAPS), buffer=buffer)
    async with contextlib.aclosing(events) as stream:
        async for event in stream:
            assert event["object"]["metadata"]["name"] == f"p{taken}"
            taken += 1
            ahead = min(total, taken + buffer + 1)
            await async_wait_for(
                lambda: asyncio.sleep(0, response.read >= ahead),  # noqa: B023  # awaited in this iteration
                timeout=5,
                what="the reader ahead",
                interval=0.001,
            )
            assert response.read <= taken + buffer + 1
    assert taken == total


async def test_a_reader_waiting_for_room_ends_when_the_consumer_stops() -> None:
    response = CountingResponse([line("ADDED", {"metadata": {"name": f"p{i}"}}) for i in range(50)])
    events = stream_events(cast(urllib3.BaseHTTPResponse, response), stamp_kind(CONFIG_MAPS), buffer=2)
    async with contextlib.aclosing(events) as stream:
        async for _ in stream:
            await async_wait_for(
                lambda: asyncio.sleep(0, response.read),
                timeout=5,
                what="the buffer full",
                done=lambda n: n >= 4,
            )
            break
    assert watch_threads() == []
    assert response.read < 50


def named(count: int) -> list[bytes]:
    return [line("ADDED", {"metadata": {"name": f"p{i}"}}) for i in range(count)]


def waiting_for_room(thread: threading.Thread) -> bool:
    """The thread is blocked inside a Semaphore's acquire, i.e. in the wait for the loop to make room."""
    frame = sys._current_frames().get(thread.ident or -1)
    in_wait = False
    while frame is not None:
        owner = frame.f_locals.get("self")
        if frame.f_code.co_name == "wait" and isinstance(owner, threading.Condition):
            in_wait = True
        if frame.f_code.co_name == "acquire" and isinstance(owner, threading.Semaphore):
            return in_wait
        frame = frame.f_back
    return False


async def reader_parked(response: CountingResponse, read: int) -> None:
    """Wait until the only watch thread has read `read` lines and is blocked waiting for room."""

    async def probe() -> tuple[int, bool]:
        threads = watch_threads()
        return response.read, len(threads) == 1 and waiting_for_room(threads[0])

    await async_wait_for(
        probe, timeout=5, what="the reader parked", interval=0.005, done=lambda s: s == (read, True)
    )


async def test_a_loop_that_takes_nothing_parks_the_reader_and_later_gets_every_line_in_order() -> None:
    buffer, total = 4, 30
    response = CountingResponse(named(total))
    events = stream_events(cast(urllib3.BaseHTTPResponse, response), stamp_kind(CONFIG_MAPS), buffer=buffer)
    async with contextlib.aclosing(events) as stream:
        first = await anext(stream)
        # One taken, `buffer` handed over and not taken, one read and held: then the reader waits.
        await reader_parked(response, 1 + buffer + 1)
        rest = [event async for event in stream]
    names = [e["object"]["metadata"]["name"] for e in [first, *rest]]
    assert names == [f"p{i}" for i in range(total)]
    assert response.read == total
    assert watch_threads() == []


@pytest.mark.parametrize("ending", ["end", "broken"])
async def test_the_end_of_a_stream_gets_past_a_full_buffer_behind_every_line(ending: str) -> None:
    """The end or a failure needs no room: the reader finishes while `buffer` lines wait to be taken."""
    buffer = 3
    broken = urllib3.exceptions.ProtocolError("IncompleteRead") if ending == "broken" else None
    response = CountingResponse(named(1 + buffer), then=broken)
    events = stream_events(cast(urllib3.BaseHTTPResponse, response), stamp_kind(CONFIG_MAPS), buffer=buffer)
    async with contextlib.aclosing(events) as stream:
        names = [(await anext(stream))["object"]["metadata"]["name"]]
        await async_wait_for(lambda: asyncio.sleep(0, response.released), timeout=5, what="the reader done")
        assert response.read == 1 + buffer
        with pytest.raises(errors.ApiError) if broken else contextlib.nullcontext():
            async for event in stream:
                names.append(event["object"]["metadata"]["name"])
    assert names == ["p0", "p1", "p2", "p3"]


async def test_cancelling_the_loop_while_the_reader_waits_for_room_ends_the_reader() -> None:
    """What losing the Lease does to an informer whose handlers fell behind."""
    response = CountingResponse(named(50))
    events = stream_events(cast(urllib3.BaseHTTPResponse, response), stamp_kind(CONFIG_MAPS), buffer=2)
    never = asyncio.Event()

    async def slow_handler() -> None:
        async with contextlib.aclosing(events) as stream:
            async for _ in stream:
                await never.wait()

    consumer = asyncio.ensure_future(slow_handler())
    await reader_parked(response, 1 + 2 + 1)
    consumer.cancel()
    with pytest.raises(asyncio.CancelledError):
        await consumer
    assert watch_threads() == []
    assert response.closed
    assert response.read == 4
