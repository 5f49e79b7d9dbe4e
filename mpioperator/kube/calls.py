"""KubeClient's calls as Protocols, each written once here: the layers above take the part of the client
they use (the informers' list and watch, the Lease access, the sync handler's writes) as one of these or
a union of them, and their tests hand them fakes of just that part."""

from __future__ import annotations

from collections.abc import AsyncGenerator
from typing import Any, Protocol

from mpioperator.api.objects import Obj
from mpioperator.kube.delete_options import BACKGROUND, DeleteOptions
from mpioperator.kube.list_options import EVERYTHING, ListOptions
from mpioperator.kube.resources import Resource


class Reads(Protocol):
    async def get(self, res: Resource, name: str, namespace: str | None = None) -> Obj: ...


class Creates(Protocol):
    async def create(self, res: Resource, body: Obj, namespace: str | None = None) -> Obj: ...


class Updates(Protocol):
    async def update(self, res: Resource, body: Obj, namespace: str | None = None) -> Obj: ...


class Writes(Creates, Updates, Protocol):
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
        self, res: Resource, name: str, namespace: str | None = None, options: DeleteOptions = BACKGROUND
    ) -> Obj: ...


class ListsAndWatches(Protocol):
    def list_pages(
        self, res: Resource, namespace: str | None = None, options: ListOptions = EVERYTHING
    ) -> AsyncGenerator[Obj, None]: ...

    def watch(
        self, res: Resource, namespace: str | None, options: ListOptions
    ) -> AsyncGenerator[Obj, None]: ...
