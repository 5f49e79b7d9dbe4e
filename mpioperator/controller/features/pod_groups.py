"""The gang's PodGroup: get-or-create-or-update before the workers, delete on cleanup.

The backend renders the desired object and says whether two specs differ; this module does the API
calls on the backend's resource, with the same ownership rule as every other child.
"""

from __future__ import annotations

import structlog

from mpioperator.api import constants as api
from mpioperator.api.extensions.parsed import Extensions
from mpioperator.api.names import pod_group_name
from mpioperator.api.objects import Obj, json_copy
from mpioperator.api.ownership import is_controlled_by
from mpioperator.controller.errors import SyncError
from mpioperator.controller.events import WARNING
from mpioperator.controller.feature import Feature, FeaturePorts
from mpioperator.controller.ports import Lister, Recorder, Writer
from mpioperator.controller.rejections import not_managed_message, refused
from mpioperator.kube import errors
from mpioperator.kube.resources import Resource
from mpioperator.podgroup.backend import PodGroupBackend
from mpioperator.podgroup.maths import launcher_in_gang

log = structlog.get_logger(__name__)

KIND = "PodGroup"


class PodGroupReconciler:
    def __init__(
        self,
        backend: PodGroupBackend,
        pod_groups: Lister | None,
        priority_classes: Lister | None,
        writer: Writer,
        recorder: Recorder,
    ) -> None:
        self._backend = backend
        self._pod_groups = pod_groups
        self._priority_classes = priority_classes
        self._w = writer
        self._rec = recorder

    @property
    def enabled(self) -> bool:
        return self._backend.enabled and self._pod_groups is not None

    def _resource(self) -> Resource:
        res = self._backend.resource
        assert res is not None, "an enabled backend names its PodGroup resource"
        return res

    def priority_of(self, name: str) -> int | None:
        """A cluster PriorityClass's value from the cache; None when it does not exist."""
        if self._priority_classes is None:
            return None
        found = self._priority_classes.get("", name)
        if found is None:
            return None
        return int(found.get("value") or 0)

    def _refuse(self, job: Obj, found: Obj) -> SyncError:
        message = not_managed_message(found["metadata"]["name"], KIND)
        self._rec.record(job, WARNING, api.REASON_RESOURCE_EXISTS, message)
        return SyncError(message)

    async def get_or_create(self, job: Obj, ext: Extensions, *, launcher_exists: bool) -> Obj:
        """Make the PodGroup match the job, creating it when missing; refuse one we do not control."""
        assert self._pod_groups is not None
        res = self._resource()
        ns = job["metadata"]["namespace"]
        desired = self._backend.new_pod_group(
            job,
            self.priority_of,
            launcher_in_gang=launcher_in_gang(
                job, launcher_exists, waits_running=ext.launch.waits_for_running_workers
            ),
        )
        cached = self._pod_groups.get(ns, pod_group_name(job))
        if cached is None:
            await self._ensure_prerequisite(job, desired)
            try:
                created: Obj = await self._w.create(res, desired, ns)
                return created
            except errors.AlreadyExists:
                # Our cache lags a create it has not delivered yet: read the object and go on.
                cached = await self._get(res, job)
            except errors.ApiError as exc:
                raise refused(exc, KIND, pod_group_name(job), "created", "creating PodGroup") from exc
        if not is_controlled_by(cached, job):
            raise self._refuse(job, cached)
        if not self._backend.updates_pod_group:
            if cached["metadata"].get("deletionTimestamp"):
                # Kept by a finalizer until its last pod ends (a resume right after a suspend): new pods
                # must wait for the new gang, not join the old one.
                raise SyncError(f"waiting for the deleted PodGroup {pod_group_name(job)} to go")
            # Immutable: the gang keeps the count it was made with until it is made again.
            return cached
        if self._backend.pod_group_spec_equal(cached, desired):
            return cached
        # A copy: upstream writes into the cached object, which hides a failed update from later syncs.
        updated = json_copy(cached)
        updated["spec"] = json_copy(desired["spec"])
        try:
            result: Obj = await self._w.update(res, updated, ns)
            return result
        except errors.ApiError as exc:
            raise refused(exc, KIND, pod_group_name(job), "updated", "updating PodGroup") from exc

    async def _get(self, res: Resource, job: Obj) -> Obj:
        try:
            found: Obj = await self._w.get(res, pod_group_name(job), job["metadata"]["namespace"])
            return found
        except errors.ApiError as exc:
            raise SyncError(f"getting {res.kind}: {exc.server_message}") from exc

    async def _ensure_prerequisite(self, job: Obj, pod_group: Obj) -> None:
        """Create what the PodGroup is made from (Kubernetes' Workload), or accept the one we own.

        Not cached: it is only written when the PodGroup is missing, which is rare.
        """
        needed = self._backend.prerequisite(job, pod_group)
        if needed is None:
            return
        res, desired = needed
        ns = job["metadata"]["namespace"]
        try:
            await self._w.create(res, desired, ns)
            return
        except errors.AlreadyExists:
            found = await self._get(res, job)
        except errors.ApiError as exc:
            raise refused(exc, res.kind, pod_group_name(job), "created", f"creating {res.kind}") from exc
        if not is_controlled_by(found, job):
            message = not_managed_message(found["metadata"]["name"], res.kind)
            self._rec.record(job, WARNING, api.REASON_RESOURCE_EXISTS, message)
            raise SyncError(message)
        if found["metadata"].get("deletionTimestamp"):
            raise SyncError(f"waiting for the deleted {res.kind} {pod_group_name(job)} to go")

    async def delete(self, job: Obj) -> None:
        """Remove the job's PodGroup if the cache has one; nothing to do (and no write) otherwise."""
        if not self.enabled:
            return
        assert self._pod_groups is not None
        ns = job["metadata"]["namespace"]
        cached = self._pod_groups.get(ns, pod_group_name(job))
        if cached is None or cached["metadata"].get("deletionTimestamp"):
            return
        if not is_controlled_by(cached, job):
            raise self._refuse(job, cached)
        targets = [self._resource()]
        needed = self._backend.prerequisite(job, cached)
        if needed is not None:
            targets.append(needed[0])
        for res in targets:
            try:
                await self._w.delete(res, pod_group_name(job), ns)
            except errors.NotFound:
                pass
            except errors.ApiError as exc:
                raise SyncError(f"deleting {res.kind}: {exc.server_message}") from exc


class PodGroupsFeature(Feature):
    def __init__(self, ports: FeaturePorts) -> None:
        listers = ports.listers
        self._pod_groups = PodGroupReconciler(
            ports.backend, listers.pod_groups, listers.priority_classes, ports.writer, ports.recorder
        )

    async def before_workers(self, job: Obj, ext: Extensions, launcher: Obj | None) -> None:
        if self._pod_groups.enabled:
            # Before the workers, so their scheduler finds the gang already defined.
            # A suspended launcher Job (a resume under WaitForWorkersReady) has no pod yet.
            running = launcher is not None and not launcher.get("spec", {}).get("suspend")
            await self._pod_groups.get_or_create(job, ext, launcher_exists=running)

    async def after_clean_up(self, job: Obj, ext: Extensions) -> None:
        await self._pod_groups.delete(job)
