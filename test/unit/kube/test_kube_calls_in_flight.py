"""A call whose caller was cancelled: never sent if it had not started, waited for by `settled` if it had;
and a lane's calls, which never wait for a connection its parent's calls hold."""

from __future__ import annotations

import asyncio
import gc
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from mpioperator.api.objects import Obj
from mpioperator.kube import errors
from mpioperator.kube.client import KubeClient
from mpioperator.kube.resources import CONFIG_MAPS, LEASES
from mpioperator.kube.transport import Answer
from mpioperator.testing.wait import async_wait_for


class HeldTransport:
    """Answers each request only once released; records what was sent."""

    def __init__(self) -> None:
        self.pool_size = 4
        self.sent: list[str] = []
        self.entered = threading.Event()
        self.release = threading.Event()

    async def request(self, method: str, path: str, **_: Any) -> Answer:
        self.sent.append(f"{method} {path}")
        self.entered.set()
        await asyncio.to_thread(self.release.wait, 10)
        return Answer(201, {}, b"{}")

    async def close(self) -> None:
        self.release.set()


def _client(transport: HeldTransport) -> KubeClient:
    return KubeClient(transport, qps=1000, burst=1000)  # type: ignore[arg-type]


async def cancel_once_sent(client: KubeClient, transport: HeldTransport) -> asyncio.Future[Obj]:
    """A create whose caller is cancelled once the call is on the wire (in the transport); the caller's
    future, for the test to hold as long as the caller would."""
    call = asyncio.ensure_future(client.create(CONFIG_MAPS, {"metadata": {"name": "a"}}, "ns"))
    await asyncio.to_thread(transport.entered.wait, 5)
    call.cancel()
    with pytest.raises(asyncio.CancelledError):
        await call
    return call


async def test_settled_waits_for_a_call_already_sent_when_its_caller_was_cancelled() -> None:
    transport = HeldTransport()
    client = _client(transport)
    await cancel_once_sent(client, transport)

    assert await client.settled(timeout=0.05) is False
    transport.release.set()
    assert await client.settled(timeout=5) is True
    await client.close()


async def test_a_call_cancelled_while_it_waits_for_a_token_is_never_sent() -> None:
    transport = HeldTransport()
    transport.release.set()
    # One token, and the next one ten seconds away: the second call waits for it.
    client = KubeClient(transport, qps=0.1, burst=1)  # type: ignore[arg-type]
    await client.create(CONFIG_MAPS, {"metadata": {"name": "a"}}, "ns")
    second = asyncio.ensure_future(client.create(CONFIG_MAPS, {"metadata": {"name": "b"}}, "ns"))
    await asyncio.sleep(0.05)
    assert not second.done()
    second.cancel()
    with pytest.raises(asyncio.CancelledError):
        await second

    assert await client.settled(timeout=5) is True
    assert transport.sent == ["POST /api/v1/namespaces/ns/configmaps"]
    await client.close()


class FailingTransport(HeldTransport):
    """The call is on the wire when its server goes away."""

    async def request(self, method: str, path: str, **_: Any) -> Answer:
        self.entered.set()
        await asyncio.to_thread(self.release.wait, 10)
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
        call = await cancel_once_sent(client, transport)
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


class HoldingServer(ThreadingHTTPServer):
    """Holds every request but those for Leases until released; records what arrived."""

    daemon_threads = True

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _Holding)
        self.arrived: list[str] = []
        self.release = threading.Event()


class _Holding(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: HoldingServer

    def _answer(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        self.server.arrived.append(f"{self.command} {self.path}")
        if "/leases/" not in self.path:
            self.server.release.wait(30)
        body = b'{"metadata": {"name": "l"}}'
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    do_POST = do_PUT = _answer

    def log_message(self, format: str, *args: object) -> None:
        pass


async def test_a_lane_call_is_answered_while_its_parents_connections_are_held_and_its_close_keeps_them() -> (
    None
):
    server = HoldingServer()
    threading.Thread(target=server.serve_forever, daemon=True).start()
    host = f"http://127.0.0.1:{server.server_address[1]}"
    # One connection: the first create holds it, the second waits for it.
    client = KubeClient.explicit(host, pool_size=1, qps=1000, burst=1000)
    lane = client.lane("leader-election")
    try:
        held = [
            asyncio.ensure_future(client.create(CONFIG_MAPS, {"metadata": {"name": n}}, "ns")) for n in "ab"
        ]

        async def first_arrived() -> bool:
            return len(server.arrived) == 1

        await async_wait_for(first_arrived, timeout=10, what="the first create to arrive")

        renewed = await lane.update(LEASES, {"metadata": {"name": "l"}}, "ns")

        assert renewed["metadata"]["name"] == "l"
        assert server.arrived == [
            "POST /api/v1/namespaces/ns/configmaps",
            "PUT /apis/coordination.k8s.io/v1/namespaces/ns/leases/l",
        ]
        assert not any(call.done() for call in held)
        await lane.close()
        server.release.set()
        await asyncio.gather(*held)
        assert len(server.arrived) == 3
    finally:
        server.release.set()
        await lane.close()
        await client.close()
        server.shutdown()
        server.server_close()
