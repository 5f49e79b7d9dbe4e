"""The leader elector's Lease access, over the operator's API client."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncGenerator
from typing import Any, Protocol

import structlog

from mpioperator.cache.backoff import Backoff
from mpioperator.cache.listwatch import ListerWatcher
from mpioperator.cache.reflector import SHORT_WATCH, ShortWatch
from mpioperator.clock import Clock, RealClock
from mpioperator.kube import errors
from mpioperator.kube.calls import Creates, Reads, Updates
from mpioperator.kube.list_options import ListOptions
from mpioperator.kube.resources import LEASES
from mpioperator.leaderelection.elector import LeaseConflict

log = structlog.get_logger(__name__)

# The server ends each watch after this long; the loop below then opens the next.
WATCH_SECONDS = 300
# A failed watch is retried after 1 s, doubling up to 30 s: an API server restarting (a 403 while its
# RBAC cache fills, connection refused) passes, and the watch comes back by itself.
WATCH_RETRY_SECONDS = 1.0
WATCH_RETRY_CAP_SECONDS = 30.0


class LeaseApi(ListerWatcher, Reads, Creates, Updates, Protocol):
    """The part of KubeClient the Lease access uses: the watch of the informers' ListerWatcher (for
    releases), and get, create and update."""


class KubeLeaseClient:
    def __init__(
        self, client: LeaseApi, *, clock: Clock | None = None, backoff: Backoff | None = None
    ) -> None:
        self._client = client
        self._clock: Clock = clock or RealClock()
        self._backoff = backoff or Backoff(
            self._clock, initial=WATCH_RETRY_SECONDS, cap=WATCH_RETRY_CAP_SECONDS
        )

    async def get(self, namespace: str, name: str) -> dict[str, Any] | None:
        try:
            return await self._client.get(LEASES, name, namespace)
        except errors.NotFound:
            return None

    async def create(self, lease: dict[str, Any]) -> dict[str, Any]:
        try:
            return await self._client.create(LEASES, lease, lease["metadata"]["namespace"])
        except (errors.AlreadyExists, errors.Conflict) as exc:
            raise LeaseConflict(str(exc)) from exc

    async def update(self, lease: dict[str, Any]) -> dict[str, Any]:
        try:
            return await self._client.update(LEASES, lease, lease["metadata"]["namespace"])
        except errors.Conflict as exc:
            raise LeaseConflict(str(exc)) from exc

    async def releases(self, namespace: str, name: str) -> AsyncGenerator[None, None]:
        """Yields whenever a watch on the lease shows it without a holder; runs until closed.

        Best effort, never given up: the elector's periodic retry stays the source of truth, so a failed
        watch (any error, a 403 while a restarted API server's RBAC is not yet synced included) is
        retried after a growing back-off, and a standby falls back to polling only meanwhile.
        """
        failing = False
        while True:
            started, seen = self._clock.now(), 0
            try:
                events = self._client.watch(
                    LEASES,
                    namespace,
                    ListOptions(
                        resource_version="",
                        timeout_seconds=WATCH_SECONDS,
                        allow_bookmarks=False,
                        field_selector=f"metadata.name={name}",
                    ),
                )
                async with contextlib.aclosing(events) as stream:
                    async for event in stream:
                        seen += 1
                        if failing:
                            failing = False
                            log.info("lease watch resumed", lease=f"{namespace}/{name}")
                        lease = event.get("object") or {}
                        if event.get("type") in ("ADDED", "MODIFIED") and not (lease.get("spec") or {}).get(
                            "holderIdentity"
                        ):
                            yield None
                if seen == 0 and self._clock.now() - started < SHORT_WATCH:
                    # Opening a watch takes no client token, so a server (or a proxy) that ends every
                    # watch at once would otherwise be asked again in a hot loop: back off instead.
                    raise ShortWatch(f"the watch ended within {SHORT_WATCH:.0f}s without any event")
            except (
                Exception
            ) as exc:  # connection errors, 403 and 5xx alike: the periodic retry covers the gap
                delay = self._backoff.next_delay()
                report = log.warning if not failing else log.debug
                report(
                    "lease watch failed; a standby takes over at its next retry until it is back",
                    lease=f"{namespace}/{name}",
                    error=f"{type(exc).__name__}: {exc}",
                    retry_in=round(delay, 2),
                )
                failing = True
                await self._clock.sleep(delay)
