"""The controller's API writer, refused once the controller has stopped.

When the controller stops (it lost the Lease, or it is shutting down) every task it started has ended,
but a stray reference to its writer must still not be able to write for a leader that no longer is one.
"""

from __future__ import annotations

from typing import Any

from mpioperator.api.objects import Obj
from mpioperator.controller.errors import ControllerStopped
from mpioperator.controller.ports import Writer
from mpioperator.kube.resources import Resource


class FencedWriter:
    """Passes every call to `writer` until `close()`; from then on each raises ControllerStopped."""

    def __init__(self, writer: Writer) -> None:
        self._writer = writer
        self._closed = False

    @property
    def closed(self) -> bool:
        return self._closed

    def close(self) -> None:
        self._closed = True

    def _open(self) -> Writer:
        if self._closed:
            raise ControllerStopped("the controller has stopped; it sends nothing more to the API server")
        return self._writer

    async def get(self, res: Resource, name: str, namespace: str | None = None) -> Obj:
        return await self._open().get(res, name, namespace)

    async def create(self, res: Resource, body: Obj, namespace: str | None = None) -> Obj:
        return await self._open().create(res, body, namespace)

    async def update(self, res: Resource, body: Obj, namespace: str | None = None) -> Obj:
        return await self._open().update(res, body, namespace)

    async def update_status(self, res: Resource, body: Obj, namespace: str | None = None) -> Obj:
        return await self._open().update_status(res, body, namespace)

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
    ) -> Obj:
        return await self._open().patch(
            res,
            name,
            body,
            namespace,
            patch_type=patch_type,
            subresource=subresource,
            field_manager=field_manager,
            force=force,
        )

    async def delete(
        self,
        res: Resource,
        name: str,
        namespace: str | None = None,
        *,
        propagation_policy: str | None = "Background",
        preconditions: Obj | None = None,
    ) -> Obj:
        return await self._open().delete(
            res, name, namespace, propagation_policy=propagation_policy, preconditions=preconditions
        )
