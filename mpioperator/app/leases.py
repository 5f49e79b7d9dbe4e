"""The leader elector's Lease access, over the operator's API client."""

from __future__ import annotations

from typing import Any

from mpioperator.kube import errors
from mpioperator.kube.client import KubeClient
from mpioperator.kube.resources import LEASES
from mpioperator.leaderelection.elector import LeaseConflict


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
