"""The elector on a fake clock: who leads when, how leadership ends, and how fast a release is taken."""

from __future__ import annotations

import asyncio
import copy
from collections.abc import AsyncGenerator
from typing import Any

import pytest

from mpioperator.clock import FakeClock, settle
from mpioperator.leaderelection.elector import LeaderElector, LeadershipLost, LeaseConflict
from mpioperator.leaderelection.record import lease_spec, new_lease, next_record

NS, NAME = "mpi-operator", "mpi-operator"
RETRY = 3.0


class MemoryLeases:
    """One Lease with optimistic concurrency, and a feed of releases for the release watch."""

    def __init__(self) -> None:
        self.lease: dict[str, Any] | None = None
        self.version = 0
        self.fail_writes = False
        self.reads = 0
        self.updates = 0
        self._watchers: list[asyncio.Queue[None]] = []

    async def get(self, namespace: str, name: str) -> dict[str, Any] | None:
        self.reads += 1
        return copy.deepcopy(self.lease)

    async def create(self, lease: dict[str, Any]) -> dict[str, Any]:
        if self.lease is not None:
            raise LeaseConflict("exists")
        return self._store(lease)

    async def update(self, lease: dict[str, Any]) -> dict[str, Any]:
        self.updates += 1
        if self.fail_writes:
            raise ConnectionError("apiserver unreachable")
        assert self.lease is not None
        if lease["metadata"].get("resourceVersion") != self.lease["metadata"]["resourceVersion"]:
            raise LeaseConflict("stale")
        return self._store(lease)

    def _store(self, lease: dict[str, Any]) -> dict[str, Any]:
        self.version += 1
        self.lease = copy.deepcopy(lease)
        self.lease["metadata"]["resourceVersion"] = str(self.version)
        if not self.lease["spec"].get("holderIdentity"):
            for queue in self._watchers:
                queue.put_nowait(None)
        return copy.deepcopy(self.lease)

    async def releases(self, namespace: str, name: str) -> AsyncGenerator[None, None]:
        queue: asyncio.Queue[None] = asyncio.Queue()
        self._watchers.append(queue)
        try:
            while True:
                await queue.get()
                yield None
        finally:
            self._watchers.remove(queue)

    def hold(self, holder: str, clock: FakeClock) -> None:
        record = next_record(None, holder, lease_duration=15, wall_now=clock.utcnow())
        self._store(new_lease(NAME, NS, record))

    def release(self, clock: FakeClock) -> None:
        assert self.lease is not None
        released = next_record(None, "", lease_duration=1, wall_now=clock.utcnow())
        self._store({**self.lease, "spec": lease_spec(released)})

    @property
    def holder(self) -> str:
        return str(((self.lease or {}).get("spec") or {}).get("holderIdentity") or "")


def elector(leases: MemoryLeases, clock: FakeClock, *, watch: bool = True) -> LeaderElector:
    return LeaderElector(
        leases,
        name=NAME,
        namespace=NS,
        identity="me",
        clock=clock,
        retry_period=RETRY,
        rand=lambda: 0.0,
        release_watch=leases if watch else None,
    )


def leading(e: LeaderElector) -> bool:
    # A call, not the attribute: mypy would narrow the attribute after one assert and hide the next.
    return e.is_leader


async def forever() -> None:
    await asyncio.Event().wait()


async def test_a_missing_lease_is_created_and_the_work_runs() -> None:
    clock, leases = FakeClock(), MemoryLeases()
    started = asyncio.Event()

    async def lead() -> None:
        started.set()

    await elector(leases, clock).run(lead)
    assert started.is_set()
    # Returning from lead() gives the lease up for the next replica.
    assert leases.holder == ""


async def _standing_by(
    *, watch: bool = True
) -> tuple[FakeClock, MemoryLeases, LeaderElector, asyncio.Future[None]]:
    """An elector running (its task) against a Lease another replica holds, once it has looked at it."""
    clock, leases = FakeClock(), MemoryLeases()
    leases.hold("other", clock)
    e = elector(leases, clock, watch=watch)
    task = asyncio.ensure_future(e.run(forever))
    await settle()
    return clock, leases, e, task


async def test_a_valid_lease_of_another_is_taken_only_after_it_expires() -> None:
    clock, leases, e, task = await _standing_by(watch=False)
    await clock.advance(12.0)
    assert not leading(e) and leases.holder == "other"
    await clock.advance(6.0)
    assert leading(e) and leases.holder == "me"
    task.cancel()
    await asyncio.gather(task, return_exceptions=True)


async def test_without_a_release_watch_a_released_lease_waits_for_the_next_retry() -> None:
    clock, leases, e, task = await _standing_by(watch=False)
    leases.release(clock)
    await settle(rounds=50)
    assert not leading(e)
    await clock.advance(RETRY)
    assert leading(e)
    task.cancel()
    await asyncio.gather(task, return_exceptions=True)


async def test_a_standby_takes_a_released_lease_at_once_without_waiting_for_its_retry() -> None:
    clock, leases, e, task = await _standing_by()
    assert not leading(e)
    leases.release(clock)
    await settle(rounds=50)
    # No time has passed: the release itself woke the standby.
    assert leading(e) and leases.holder == "me"
    task.cancel()
    await asyncio.gather(task, return_exceptions=True)


async def test_cancelling_the_leader_stops_its_work_and_releases_the_lease() -> None:
    clock, leases = FakeClock(), MemoryLeases()
    e = elector(leases, clock)
    stopped = asyncio.Event()

    async def lead() -> None:
        try:
            await forever()
        finally:
            stopped.set()

    task = asyncio.ensure_future(e.run(lead))
    await settle()
    assert leases.holder == "me"
    task.cancel()
    await asyncio.gather(task, return_exceptions=True)
    assert stopped.is_set() and leases.holder == "" and not leading(e)


async def test_a_leader_that_cannot_renew_within_the_deadline_loses_leadership() -> None:
    clock, leases = FakeClock(), MemoryLeases()
    e = elector(leases, clock)
    task = asyncio.ensure_future(e.run(forever))
    await settle()
    assert leading(e)
    leases.fail_writes = True
    await clock.advance(RETRY)  # the renewal attempt fails
    assert not task.done()
    await clock.advance(RETRY)  # a further retry would pass the renew deadline: give up
    with pytest.raises(LeadershipLost):
        await task
    assert not leading(e)


async def test_a_leader_renews_with_one_update_and_no_read() -> None:
    clock, leases = FakeClock(), MemoryLeases()
    e = elector(leases, clock)
    task = asyncio.ensure_future(e.run(forever))
    await settle()
    reads, updates, version = leases.reads, leases.updates, leases.version
    await clock.advance(RETRY)
    await clock.advance(RETRY)
    assert (leases.reads - reads, leases.updates - updates) == (0, 2)
    assert leases.version == version + 2 and leases.holder == "me" and leading(e)
    task.cancel()
    await asyncio.gather(task, return_exceptions=True)


async def test_a_leader_whose_lease_was_written_by_another_reads_it_before_deciding() -> None:
    clock, leases = FakeClock(), MemoryLeases()
    e = elector(leases, clock)
    task = asyncio.ensure_future(e.run(forever))
    await settle()
    leases.hold("other", clock)  # a write we did not make: our next optimistic update is stale
    reads = leases.reads
    await clock.advance(RETRY)
    # The stale update conflicted, the Lease was read, and it is another's: we do not overwrite it.
    assert leases.reads == reads + 1 and leases.holder == "other"
    await clock.advance(RETRY)  # still another's, and the renew deadline has passed
    with pytest.raises(LeadershipLost):
        await task
    assert leases.holder == "other"
