"""Lease-based leader election on asyncio, with client-go's timing rules.

Only the leader runs the controller. A leader that cannot renew within the renew deadline stops leading
(the caller exits non-zero, so a crash-looping pod never keeps working on a lease it lost). Cancelling the
elector (SIGTERM) stops the leading work and releases the lease. Unlike client-go, a standby given a
release watch also tries the moment it sees the lease released, instead of at its next retry period,
so a rolling update hands over in well under a retry period.
"""

from __future__ import annotations

import asyncio
import contextlib
import random
from collections.abc import AsyncGenerator, Awaitable, Callable
from typing import Any, Protocol

from mpioperator.clock import Clock
from mpioperator.leaderelection.record import (
    LeaderRecord,
    held_by_other,
    lease_spec,
    new_lease,
    next_record,
    record_from_lease,
    released,
)

JITTER_FACTOR = 1.2
# Upstream's healthz watchdog tolerates this long past the lease duration without a renewal.
WATCHDOG_SLACK_SECONDS = 20.0


class LeaseConflict(Exception):
    """Another writer got there first (AlreadyExists on create, Conflict on update)."""


class LeaseClient(Protocol):
    async def get(self, namespace: str, name: str) -> dict[str, Any] | None: ...

    async def create(self, lease: dict[str, Any]) -> dict[str, Any]: ...

    async def update(self, lease: dict[str, Any]) -> dict[str, Any]: ...


class ReleaseWatch(Protocol):
    def releases(self, namespace: str, name: str) -> AsyncGenerator[None, None]:
        """Yields whenever the lease is seen without a holder; runs until closed."""
        ...


class LeadershipLost(Exception):
    pass


class LeaderElector:
    def __init__(
        self,
        client: LeaseClient,
        *,
        name: str,
        namespace: str,
        identity: str,
        clock: Clock,
        lease_duration: float = 15.0,
        renew_deadline: float = 5.0,
        retry_period: float = 3.0,
        on_new_leader: Callable[[str], None] | None = None,
        on_error: Callable[[BaseException], None] | None = None,
        rand: Callable[[], float] = random.random,
        release_watch: ReleaseWatch | None = None,
    ):
        self.client = client
        self.name = name
        self.namespace = namespace
        self.identity = identity
        self.clock = clock
        self.lease_duration = lease_duration
        self.renew_deadline = renew_deadline
        self.retry_period = retry_period
        self._on_new_leader = on_new_leader
        self._on_error = on_error
        self._rand = rand
        self._release_watch = release_watch
        self.is_leader = False
        self.leader = ""
        self._observed: LeaderRecord | None = None
        self._observed_at = 0.0
        self._last_renew = 0.0
        # The Lease as our last successful write returned it: a leader renews by updating it directly.
        self._written: dict[str, Any] | None = None

    def healthz(self) -> str | None:
        """Watchdog for /healthz: a leader that has not renewed for too long is unhealthy."""
        if (
            self.is_leader
            and self.clock.now() - self._last_renew > self.lease_duration + WATCHDOG_SLACK_SECONDS
        ):
            return f"failed election to renew leadership on lease {self.name}"
        return None

    async def run(self, lead: Callable[[], Awaitable[None]]) -> None:
        """Wait to become leader, then run `lead()` while renewing.

        Returns when `lead()` returns (after releasing the lease); raises LeadershipLost when renewal fails.
        """
        await self._acquire()
        self.is_leader = True
        lead_task = asyncio.ensure_future(lead())
        renew_task = asyncio.ensure_future(self._renew_until_lost())
        try:
            done, _ = await asyncio.wait({lead_task, renew_task}, return_when=asyncio.FIRST_COMPLETED)
        except asyncio.CancelledError:
            await _cancel(lead_task, renew_task)
            await self._release()
            raise
        if renew_task in done:
            await _cancel(lead_task)
            self.is_leader = False
            renew_task.result()
            raise LeadershipLost(f"lost the lease {self.namespace}/{self.name}")
        await _cancel(renew_task)
        await self._release()
        lead_task.result()

    async def _acquire(self) -> None:
        released = asyncio.Event()
        follower = asyncio.ensure_future(self._follow_releases(released)) if self._release_watch else None
        try:
            while True:
                # Cleared before the attempt, so a release seen while it runs still cuts the next wait short.
                released.clear()
                if await self._try_acquire_or_renew():
                    return
                await self._sleep_unless(
                    released, self.retry_period * (1 + self._rand() * (JITTER_FACTOR - 1))
                )
        finally:
            if follower is not None:
                await _cancel(follower)

    async def _follow_releases(self, released: asyncio.Event) -> None:
        assert self._release_watch is not None
        async with contextlib.aclosing(self._release_watch.releases(self.namespace, self.name)) as seen:
            async for _ in seen:
                released.set()

    async def _sleep_unless(self, event: asyncio.Event, seconds: float) -> None:
        sleeper = asyncio.ensure_future(self.clock.sleep(seconds))
        waiter = asyncio.ensure_future(event.wait())
        try:
            await asyncio.wait({sleeper, waiter}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            await _cancel(sleeper, waiter)

    async def _renew_until_lost(self) -> None:
        while True:
            await self.clock.sleep(self.retry_period)
            deadline = self.clock.now() + self.renew_deadline
            while not await self._try_acquire_or_renew():
                if self.clock.now() + self.retry_period > deadline:
                    return
                await self.clock.sleep(self.retry_period)

    async def _try_acquire_or_renew(self) -> bool:
        try:
            return await asyncio.wait_for(self._attempt(), timeout=self.renew_deadline)
        except LeaseConflict:
            return False
        except Exception as exc:  # API errors and timeouts are retried like client-go does
            if self._on_error:
                self._on_error(exc)
            return False

    async def _attempt(self) -> bool:
        now = self.clock.now()
        if await self._renew_optimistically(now):
            return True
        lease = await self.client.get(self.namespace, self.name)
        if lease is None:
            record = next_record(
                None, self.identity, lease_duration=self.lease_duration, wall_now=self.clock.utcnow()
            )
            created = await self.client.create(new_lease(self.name, self.namespace, record))
            self._wrote(created, now)
            return True
        current = record_from_lease(lease)
        self._observe(current, now)
        if held_by_other(current, self.identity, observed_at=self._observed_at, now=now):
            return False
        record = next_record(
            current, self.identity, lease_duration=self.lease_duration, wall_now=self.clock.utcnow()
        )
        self._wrote(await self.client.update({**lease, "spec": lease_spec(record)}), now)
        return True

    async def _renew_optimistically(self, now: float) -> bool:
        """client-go's fast path: a leader whose observed lease is still valid updates the Lease it last
        wrote without reading it first, one request per renewal instead of two. The update carries that
        object's resourceVersion, so if anyone else has written the Lease since, it fails with a Conflict
        and the attempt goes on by reading the Lease, as a standby's does."""
        written = self._written
        if not self.is_leader or written is None or self._observed is None:
            return False
        if now >= self._observed_at + self._observed.lease_duration_seconds:
            return False
        record = next_record(
            self._observed, self.identity, lease_duration=self.lease_duration, wall_now=self.clock.utcnow()
        )
        try:
            updated = await self.client.update({**written, "spec": lease_spec(record)})
        except Exception:  # a Conflict included; the slow path reads the Lease, decides and reports
            self._written = None
            return False
        self._wrote(updated, now)
        return True

    def _wrote(self, lease: dict[str, Any], now: float) -> None:
        self._written = lease
        self._observe(record_from_lease(lease), now)
        self._last_renew = now

    def _observe(self, record: LeaderRecord, now: float) -> None:
        if record != self._observed:
            self._observed = record
            self._observed_at = now
        if record.holder and record.holder != self.leader:
            self.leader = record.holder
            if self._on_new_leader:
                self._on_new_leader(record.holder)

    async def _release(self) -> None:
        if not self.is_leader:
            return
        self.is_leader = False
        with contextlib.suppress(Exception):
            lease = await asyncio.wait_for(
                self.client.get(self.namespace, self.name), timeout=self.renew_deadline
            )
            if lease is not None and record_from_lease(lease).holder == self.identity:
                record = released(record_from_lease(lease), self.clock.utcnow())
                await asyncio.wait_for(
                    self.client.update({**lease, "spec": lease_spec(record)}), timeout=self.renew_deadline
                )


async def _cancel(*tasks: asyncio.Future[Any]) -> None:
    for task in tasks:
        task.cancel()
    for task in tasks:
        with contextlib.suppress(asyncio.CancelledError, Exception):
            await task
