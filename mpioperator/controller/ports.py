"""The seams the sync handler talks through: read-only caches and the API writer."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from mpioperator.api.objects import Obj
from mpioperator.kube.resources import Resource


class Lister(Protocol):
    """A read-only view of one informer's store. Returned objects must not be mutated."""

    def get(self, namespace: str, name: str) -> Obj | None: ...

    def select(self, namespace: str, labels: Mapping[str, str]) -> list[Obj]: ...

    def owned_by(self, uid: str) -> list[Obj]: ...


@dataclass(slots=True)
class Listers:
    mpijobs: Lister
    pods: Lister
    jobs: Lister
    config_maps: Lister
    secrets: Lister
    services: Lister
    # Watched only when gang scheduling is on (the backend's PodGroup kind; cluster PriorityClasses).
    pod_groups: Lister | None = None
    priority_classes: Lister | None = None


class Writer(Protocol):
    """The API writes a sync issues; KubeClient satisfies it."""

    async def get(self, res: Resource, name: str, namespace: str | None = None) -> Obj: ...

    async def create(self, res: Resource, body: Obj, namespace: str | None = None) -> Obj: ...

    async def update(self, res: Resource, body: Obj, namespace: str | None = None) -> Obj: ...

    async def update_status(self, res: Resource, body: Obj, namespace: str | None = None) -> Obj: ...

    async def patch(
        self,
        res: Resource,
        name: str,
        body: Obj | list[Any],
        namespace: str | None = None,
        *,
        patch_type: str = "merge",
        subresource: str | None = None,
        field_manager: str | None = None,
        force: bool = False,
    ) -> Obj: ...

    async def delete(
        self,
        res: Resource,
        name: str,
        namespace: str | None = None,
        *,
        propagation_policy: str | None = "Background",
        preconditions: Obj | None = None,
    ) -> Obj: ...


class Recorder(Protocol):
    def record(self, obj: Obj, event_type: str, reason: str, message: str) -> None: ...


class PodLogs(Protocol):
    """Reads a pod's log (pods/log); KubeClient satisfies it."""

    async def pod_log(
        self,
        name: str,
        namespace: str,
        *,
        container: str | None = None,
        tail_lines: int | None = None,
        since_time: str | None = None,
        limit_bytes: int | None = None,
        timestamps: bool = False,
    ) -> str: ...
