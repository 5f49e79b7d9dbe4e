"""The seams the sync handler talks through: read-only caches and the API writer."""

from __future__ import annotations

from collections.abc import Hashable, Mapping
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from mpioperator.api.objects import Obj
from mpioperator.kube.calls import Reads, Writes
from mpioperator.kube.log_options import WHOLE_LOG, LogOptions


class Lister(Protocol):
    """A read-only view of one informer's store. Returned objects must not be mutated."""

    def get(self, namespace: str, name: str) -> Obj | None: ...

    def select(self, namespace: str, labels: Mapping[str, str]) -> list[Obj]: ...

    def owned_by(self, uid: str) -> list[Obj]: ...


@runtime_checkable
class VersionedLister(Protocol):
    """A lister that can tell, in O(1), that a selection by job name would answer as before."""

    def select_version(self, namespace: str, labels: Mapping[str, str]) -> Hashable | None: ...


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


class Writer(Reads, Writes, Protocol):
    """The API calls a sync issues (reads of what a cache cannot answer, and writes); KubeClient satisfies
    it."""


class Recorder(Protocol):
    def record(self, obj: Obj, event_type: str, reason: str, message: str) -> None: ...


class PodLogs(Protocol):
    """Reads a pod's log (pods/log); KubeClient satisfies it."""

    async def pod_log(self, name: str, namespace: str, options: LogOptions = WHOLE_LOG) -> str: ...
