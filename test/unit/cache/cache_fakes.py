"""Fakes for the cache unit tests: a list/watch source the test drives, and a clock whose time moves
when someone sleeps.

Only for injecting faults a real API server cannot produce on demand (decisions.md D2); the
integration tests use the real client against a real kube-apiserver.
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import AsyncGenerator, Callable
from dataclasses import fields
from typing import Any

from mpioperator.api.objects import Obj
from mpioperator.clock import FakeClock
from mpioperator.kube.list_options import EVERYTHING, ListOptions
from mpioperator.kube.resources import Resource
from mpioperator.testing.wait import async_wait_for

_CLOSE = object()


def as_kwargs(options: ListOptions) -> dict[str, Any]:
    """The options a list or watch was given, by name, as the calls record them."""
    return {f.name: getattr(options, f.name) for f in fields(options)}


def sleep_driven_clock() -> FakeClock:
    """Time moves only when someone sleeps; every sleep is recorded in `sleeps`."""
    return FakeClock(on_sleep="advance")


def cm(name: str, rv: str, namespace: str = "ns", **meta: Any) -> Obj:
    """A ConfigMap as a list item (no kind/apiVersion, as the server sends them)."""
    return {"metadata": {"name": name, "namespace": namespace, "resourceVersion": rv, **meta}}


def event(kind: str, obj: Obj) -> dict[str, Any]:
    return {"type": kind, "object": obj}


def bookmark(rv: str) -> dict[str, Any]:
    return {"type": "BOOKMARK", "object": {"kind": "ConfigMap", "metadata": {"resourceVersion": rv}}}


class FakeStream:
    def __init__(self, kwargs: dict[str, Any]) -> None:
        self.kwargs = kwargs
        self._queue: asyncio.Queue[Any] = asyncio.Queue()
        self.closed = False

    def send(self, *events: dict[str, Any]) -> None:
        for e in events:
            self._queue.put_nowait(e)

    def fail(self, exc: BaseException) -> None:
        self._queue.put_nowait(exc)

    def end(self) -> None:
        self._queue.put_nowait(_CLOSE)

    async def events(self) -> AsyncGenerator[dict[str, Any], None]:
        try:
            while True:
                item = await self._queue.get()
                if item is _CLOSE:
                    return
                if isinstance(item, BaseException):
                    raise item
                yield item
        finally:
            self.closed = True


class FakeSource:
    """Serves `objects` at `rv` to lists (paginated when asked) and hands out test-driven watch streams."""

    def __init__(self, objects: list[Obj] | None = None, rv: str = "10") -> None:
        self.objects = list(objects or [])
        self.rv = rv
        self.list_errors: deque[BaseException] = deque()
        self.list_gate: asyncio.Event | None = None
        self.list_calls: list[dict[str, Any]] = []
        self.watch_calls: list[dict[str, Any]] = []
        self.streams: list[FakeStream] = []

    async def list_pages(
        self, res: Resource, namespace: str | None = None, options: ListOptions = EVERYTHING
    ) -> AsyncGenerator[dict[str, Any], None]:
        """Page after page, each asked for once the previous one is taken."""
        token = None
        while True:
            page = await self._page(res, namespace, **{**as_kwargs(options), "continue_token": token})
            yield page
            token = page["metadata"].get("continue")
            if not token:
                return

    async def _page(self, res: Resource, namespace: str | None = None, **kwargs: Any) -> dict[str, Any]:
        self.list_calls.append({"namespace": namespace, **kwargs})
        await asyncio.sleep(0)
        if self.list_gate is not None:
            await self.list_gate.wait()
        if self.list_errors:
            raise self.list_errors.popleft()
        start = int(kwargs.get("continue_token") or 0)
        limit = kwargs.get("limit") or len(self.objects)
        page = self.objects[start : start + limit]
        meta: dict[str, Any] = {"resourceVersion": self.rv}
        if start + limit < len(self.objects):
            meta["continue"] = str(start + limit)
        return {"kind": f"{res.kind}List", "metadata": meta, "items": [dict(o) for o in page]}

    def watch(
        self, res: Resource, namespace: str | None, options: ListOptions
    ) -> AsyncGenerator[dict[str, Any], None]:
        call = {"namespace": namespace, **as_kwargs(options)}
        self.watch_calls.append(call)
        stream = FakeStream(call)
        self.streams.append(stream)
        return stream.events()

    async def watch_number(self, n: int) -> FakeStream:
        """The n-th watch stream (1-based), once the reflector has opened it."""
        await wait(lambda: len(self.streams) >= n, f"watch #{n} to open")
        return self.streams[n - 1]


async def wait(cond: Callable[[], bool], what: str, timeout: float = 5.0) -> None:
    async def probe() -> bool:
        return cond()

    await async_wait_for(probe, timeout=timeout, what=what, interval=0.002)


async def settle(rounds: int = 50) -> None:
    """Let every ready task run (for asserting that something did NOT happen)."""
    for _ in range(rounds):
        await asyncio.sleep(0)
