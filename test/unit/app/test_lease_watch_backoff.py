"""The lease-release watch takes no client token, so a watch that ends at once must not be reopened in a
hot loop: it counts as a failure and waits for the back-off; a watch that ran its full time is reopened
at once."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncGenerator
from typing import Any

from mpioperator.api.objects import Obj
from mpioperator.app.leases import WATCH_SECONDS, KubeLeaseClient
from mpioperator.cache.backoff import Backoff
from mpioperator.clock import FakeClock, settle
from mpioperator.kube.list_options import EVERYTHING, ListOptions
from mpioperator.kube.resources import Resource


class EndingWatches:
    """A LeaseApi whose every watch ends without an event, after `lasts` seconds of the fake clock."""

    def __init__(self, clock: FakeClock, lasts: float) -> None:
        self.clock = clock
        self.lasts = lasts
        self.opened = 0

    async def get(self, res: Resource, name: str, namespace: str | None = None) -> Obj:
        raise NotImplementedError

    async def create(self, res: Resource, body: Obj, namespace: str | None = None) -> Obj:
        raise NotImplementedError

    async def update(self, res: Resource, body: Obj, namespace: str | None = None) -> Obj:
        raise NotImplementedError

    def list_pages(
        self, res: Resource, namespace: str | None = None, options: ListOptions = EVERYTHING
    ) -> AsyncGenerator[Obj, None]:
        raise NotImplementedError

    async def watch(
        self, res: Resource, namespace: str | None, options: ListOptions
    ) -> AsyncGenerator[Obj, None]:
        self.opened += 1
        await asyncio.sleep(0)  # opening a real watch always waits for the server
        if self.lasts:
            await self.clock.sleep(self.lasts)
        nothing: list[dict[str, Any]] = []
        for event in nothing:  # an async generator that yields nothing
            yield event


@contextlib.asynccontextmanager
async def following(api: EndingWatches, clock: FakeClock) -> AsyncGenerator[None, None]:
    backoff = Backoff(clock, initial=1.0, cap=30.0, rand=lambda: 1.0)  # delays 1, 2, 4, ... s exactly
    leases = KubeLeaseClient(api, clock=clock, backoff=backoff)

    async def follow() -> None:
        async for _ in leases.releases("ns", "mpi-operator"):
            pass

    task = asyncio.ensure_future(follow())
    try:
        await settle()
        yield
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task


async def test_a_watch_the_server_ends_at_once_is_reopened_only_after_the_back_off() -> None:
    clock = FakeClock()
    api = EndingWatches(clock, lasts=0.0)
    async with following(api, clock):
        assert api.opened == 1
        await clock.advance(0.99)
        assert api.opened == 1
        await clock.advance(0.02)
        assert api.opened == 2
        await clock.advance(1.98)  # the second wait is 2 s
        assert api.opened == 2
        await clock.advance(0.02)
        assert api.opened == 3


async def test_a_watch_that_ran_its_full_time_is_reopened_at_once() -> None:
    clock = FakeClock()
    api = EndingWatches(clock, lasts=float(WATCH_SECONDS))
    async with following(api, clock):
        assert api.opened == 1
        await clock.advance(WATCH_SECONDS)
        assert api.opened == 2
        await clock.advance(WATCH_SECONDS)
        assert api.opened == 3
