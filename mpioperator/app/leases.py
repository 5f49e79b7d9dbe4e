"""The leader elector's Lease access, over the operator's API client."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncGenerator
from typing import Any

import structlog

from mpioperator.kube import errors
from mpioperator.kube.client import KubeClient
from mpioperator.kube.resources import LEASES
from mpioperator.leaderelection.elector import LeaseConflict

log = structlog.get_logger(__name__)

# The server ends each watch after this long; the loop below then opens the next.
WATCH_SECONDS = 300
WATCH_RETRY_SECONDS = 1.0


class KubeLeaseClient:
    def __init__(self, client: KubeClient) -> None:
        self._client = client

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
        """Yields whenever a watch on the lease shows it without a holder.

        Best effort: the elector's periodic retry stays the source of truth, so errors only pause the watch.
        """
        while True:
            try:
                events = self._client.watch(
                    LEASES,
                    namespace,
                    resource_version="",
                    timeout_seconds=WATCH_SECONDS,
                    allow_bookmarks=False,
                    field_selector=f"metadata.name={name}",
                )
                async with contextlib.aclosing(events) as stream:
                    async for event in stream:
                        lease = event.get("object") or {}
                        if event.get("type") in ("ADDED", "MODIFIED") and not (lease.get("spec") or {}).get(
                            "holderIdentity"
                        ):
                            yield None
            except errors.Forbidden as exc:
                log.warning(
                    "may not watch the lease; a standby takes over at its next retry instead", error=str(exc)
                )
                return
            except Exception as exc:  # connection errors too: the periodic retry covers the gap
                log.debug("lease watch failed; retrying", error=str(exc))
                await asyncio.sleep(WATCH_RETRY_SECONDS)
