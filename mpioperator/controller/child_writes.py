"""How the child reconciler writes one child: create it or read what the server has under its name, replace
only the fields that differ from what is wanted, refuse an object of that name the job does not control."""

from __future__ import annotations

from mpioperator.api import constants as api
from mpioperator.api.objects import Obj, json_copy
from mpioperator.api.ownership import is_controlled_by
from mpioperator.controller.errors import SyncError
from mpioperator.controller.events import WARNING
from mpioperator.controller.fields import get_path, same, set_path
from mpioperator.controller.ports import Recorder, Writer
from mpioperator.controller.rejections import not_managed_message, refused
from mpioperator.kube import errors
from mpioperator.kube.resources import Resource


class ChildWrites:
    def __init__(self, writer: Writer, recorder: Recorder) -> None:
        self._w = writer
        self._rec = recorder

    def refuse(self, job: Obj, obj: Obj, kind: str = "") -> SyncError:
        message = not_managed_message(obj["metadata"]["name"], obj.get("kind", kind))
        self._rec.record(job, WARNING, api.REASON_RESOURCE_EXISTS, message)
        return SyncError(message)

    async def upsert(
        self,
        job: Obj,
        res: Resource,
        cached: Obj | None,
        desired: Obj,
        differs: list[str],
        what: str,
        *,
        reapply_on_conflict: bool = True,
    ) -> Obj:
        """Create `desired` when missing; otherwise replace only the `differs` fields that changed."""
        ns = job["metadata"]["namespace"]
        name = desired["metadata"]["name"]
        if cached is None:
            cached, created = await self.create_or_read(res, desired, ns, what)
            if created:
                return cached
        try:
            try:
                return await self._replace_differences(job, res, cached, desired, differs)
            except errors.Conflict:
                if not reapply_on_conflict:
                    raise
                # Our cache is behind the server, most often behind our own previous write to this child
                # (a ConfigMap rewritten as workers come up): the fields we own are re-applied once to
                # the server's version instead of failing the whole sync and retrying it with backoff.
                fresh = await self.read(res, name, ns, what)
                return await self._replace_differences(job, res, fresh, desired, differs)
        except errors.ApiError as exc:
            raise refused(exc, res.kind, name, "updated", what) from exc

    async def _replace_differences(
        self, job: Obj, res: Resource, current: Obj, desired: Obj, differs: list[str]
    ) -> Obj:
        if not is_controlled_by(current, job):
            raise self.refuse(job, current)
        if all(same(get_path(current, p), get_path(desired, p)) for p in differs):
            return current
        updated = json_copy(current)
        for p in differs:
            set_path(updated, p, json_copy(get_path(desired, p)))
        return await self._w.update(res, updated, job["metadata"]["namespace"])

    async def create_or_read(self, res: Resource, desired: Obj, ns: str, what: str) -> tuple[Obj, bool]:
        """Creates `desired`, or reads what the server already has under its name when our cache lags
        (a create not delivered yet, or a new leader's cache that has not seen it); True when created."""
        name = desired["metadata"]["name"]
        try:
            return await self._w.create(res, desired, ns), True
        except errors.AlreadyExists:
            return await self.read(res, name, ns, what), False
        except errors.ApiError as exc:
            raise refused(exc, res.kind, name, "created", what) from exc

    async def read(self, res: Resource, name: str, namespace: str, what: str) -> Obj:
        try:
            found: Obj = await self._w.get(res, name, namespace)
            return found
        except errors.ApiError as exc:
            raise SyncError(f"{what}: {exc.server_message}") from exc
