"""A call whose caller was cancelled: never sent if it had not started, waited for by `settled` if it had."""

from __future__ import annotations

import asyncio
import gc
import threading
from typing import Any

import pytest

from mpioperator.kube import errors
from mpioperator.kube.client import KubeClient
from mpioperator.kube.resources import CONFIG_MAPS, LEASES
from mpioperator.kube.transport import Answer


class HeldTransport:
    """Answers each request only once released; records what was sent."""

    def __init__(self) -> None:
        self.pool_size = 4
        self.sent: list[str] = []
        self.entered = threading.Event()
        self.release = threading.Event()

    def request(self, method: str, path: str, **_: Any) -> Answer:
        self.sent.append(f"{method} {path}")
        self.entered.set()
        self.release.wait(10)
        return Answer(201, {}, b"{}")

    def close(self) -> None:
        self.release.set()


def _client(transport: HeldTransport) -> KubeClient:
    return KubeClient(transport, qps=1000, burst=1000, workers=1)  # type: ignore[arg-type]


async def test_settled_waits_for_a_call_already_sent_when_its_caller_was_cancelled() -> None:
    transport = HeldTransport()
    client = _client(transport)
    call = asyncio.ensure_future(client.create(CONFIG_MAPS, {"metadata": {"name": "a"}}, "ns"))
    await asyncio.to_thread(transport.entered.wait, 5)
    call.cancel()
    with pytest.raises(asyncio.CancelledError):
        await call

    assert await client.settled(timeout=0.05) is False
    transport.release.set()
    assert await client.settled(timeout=5) is True
    await client.close()


async def test_a_cancelled_call_that_had_not_started_is_never_sent() -> None:
    transport = HeldTransport()
    client = _client(transport)  # one thread: the second call waits behind the first
    first = asyncio.ensure_future(client.create(CONFIG_MAPS, {"metadata": {"name": "a"}}, "ns"))
    await asyncio.to_thread(transport.entered.wait, 5)
    second = asyncio.ensure_future(client.create(CONFIG_MAPS, {"metadata": {"name": "b"}}, "ns"))
    await asyncio.sleep(0)  # let it reach the pool
    second.cancel()
    with pytest.raises(asyncio.CancelledError):
        await second
    transport.release.set()

    await first
    assert await client.settled(timeout=5) is True
    assert transport.sent == ["POST /api/v1/namespaces/ns/configmaps"]
    await client.close()


class FailingTransport(HeldTransport):
    """The call is on the wire when its server goes away."""

    def request(self, method: str, path: str, **_: Any) -> Answer:
        self.entered.set()
        self.release.wait(10)
        raise errors.ApiError(0, "", "Connection aborted")


async def test_a_cancelled_call_that_later_fails_is_not_reported_as_an_unretrieved_exception() -> None:
    """A deposed leader's last writes fail when the API server they went to dies; `settled` has seen them
    end, so asyncio must not print their traceback as 'Future exception was never retrieved'."""
    reported: list[str] = []
    loop = asyncio.get_running_loop()
    previous = loop.get_exception_handler()
    # Only this report counts: the session's loop may also collect tasks other tests left behind.
    loop.set_exception_handler(
        lambda _, context: (
            reported.append(str(context.get("message")))
            if "never retrieved" in str(context.get("message"))
            else None
        )
    )
    try:
        transport = FailingTransport()
        client = _client(transport)
        call = asyncio.ensure_future(client.create(CONFIG_MAPS, {"metadata": {"name": "a"}}, "ns"))
        await asyncio.to_thread(transport.entered.wait, 5)
        call.cancel()
        with pytest.raises(asyncio.CancelledError):
            await call
        transport.release.set()

        assert await client.settled(timeout=5) is True
        await client.close()
        del call
        await asyncio.sleep(0.05)
        gc.collect()
        await asyncio.sleep(0)
    finally:
        loop.set_exception_handler(previous)

    assert reported == []


class LeaseFreeTransport(HeldTransport):
    """Holds every request but those for Leases."""

    def request(self, method: str, path: str, **kwargs: Any) -> Answer:
        if "/leases/" in path:
            self.sent.append(f"{method} {path}")
            return Answer(200, {}, b'{"metadata": {"name": "l"}}')
        return super().request(method, path, **kwargs)


async def test_a_lane_call_is_sent_while_its_parents_threads_are_held_and_its_close_keeps_theirs() -> None:
    transport = LeaseFreeTransport()
    client = _client(transport)  # one thread, held by the first create; the second queues for it
    lane = client.lane("leader-election")
    held = [asyncio.ensure_future(client.create(CONFIG_MAPS, {"metadata": {"name": n}}, "ns")) for n in "ab"]
    await asyncio.to_thread(transport.entered.wait, 5)

    renewed = await lane.update(LEASES, {"metadata": {"name": "l"}}, "ns")

    assert renewed["metadata"]["name"] == "l"
    assert transport.sent == [
        "POST /api/v1/namespaces/ns/configmaps",
        "PUT /apis/coordination.k8s.io/v1/namespaces/ns/leases/l",
    ]
    assert not any(call.done() for call in held)
    await lane.close()
    assert not transport.release.is_set(), "the lane's close left the shared transport open"
    transport.release.set()
    await asyncio.gather(*held)
    await client.close()
