"""mpioperator.io/roll-workers-on-template-change: edits reaching the pods before the launcher starts, and
refused with a condition once it runs (decisions-local L14, docs/extensions.md; the checks are
controller/template_edits.py's)."""

from __future__ import annotations

from mpioperator.api import names
from mpioperator.api.extensions.parsed import Extensions
from mpioperator.api.objects import Obj
from mpioperator.controller import conditions
from mpioperator.controller.bounded import BoundedSet
from mpioperator.controller.errors import SyncError
from mpioperator.controller.events import NORMAL, WARNING
from mpioperator.controller.feature import Feature, FeaturePorts, Seen
from mpioperator.controller.template_edits import (
    COND_REFUSED,
    REASON_LAUNCHER_REMADE,
    REASON_WORKERS_ROLLED,
    launcher_to_remake,
    refusal,
    running_edit,
    workers_to_roll,
)
from mpioperator.kube import errors
from mpioperator.kube.delete_options import DeleteOptions
from mpioperator.kube.resources import JOBS, PODS


class WorkerRollFeature(Feature):
    """The annotation's two steps: the roll before the launcher starts (after_workers), and the refusal
    condition once it runs (describe); the restart itself is features/restarts.py's."""

    def __init__(self, ports: FeaturePorts) -> None:
        self._l = ports.listers
        self._w = ports.writer
        self._rec = ports.recorder
        self._deleted = BoundedSet[str]()
        # Every feature is told before a rolled worker is deleted (the exec agent's Role lets go of it).
        self._before_delete = ports.before_delete

    def _launcher_pods(self, launcher: Obj | None) -> list[Obj]:
        return self._l.pods.owned_by(launcher["metadata"].get("uid", "")) if launcher else []

    async def after_workers(
        self, job: Obj, ext: Extensions, launcher: Obj | None, workers: list[Obj]
    ) -> tuple[bool, Obj | None]:
        """Delete the workers and launcher Job made from older templates: whether any went (nothing new
        is made in this sync then), and the launcher Job still there."""
        if launcher is not None and self._deleted.seen(launcher["metadata"].get("uid", "")):
            return True, None  # deleted by an earlier sync; the cache has not seen it go yet
        launcher_pods = self._launcher_pods(launcher)
        stale = [
            p
            for p in workers_to_roll(job, workers, launcher, launcher_pods, ext)
            if not self._deleted.seen(p["metadata"].get("uid", ""))
        ]
        if stale:
            await self._before_delete(job, ext, stale)
        for pod in stale:
            await self._delete_pod(pod["metadata"])
        if stale:
            pods = ", ".join(sorted(p["metadata"]["name"] for p in stale))
            message = f"Worker template changed: re-creating workers {pods}"
            self._rec.record(job, NORMAL, REASON_WORKERS_ROLLED, message)
        if launcher is None or not launcher_to_remake(job, ext, launcher, launcher_pods):
            return bool(stale), launcher
        await self._delete_launcher(launcher["metadata"])
        message = f"Launcher template changed: re-creating launcher Job {names.launcher_name(job)}"
        self._rec.record(job, NORMAL, REASON_LAUNCHER_REMADE, message)
        return True, None

    def describe(self, job: Obj, ext: Extensions, status: Obj, seen: Seen) -> None:
        """`TemplateChangeRefused` while an edit cannot reach the running pods; one Warning per message."""
        edited = running_edit(job, ext, seen.workers, seen.launcher, seen.launcher_pods)
        refused = None if edited is None or conditions.is_finished(status) else refusal(job, ext, edited)
        if refused is None:
            conditions.drop(status, COND_REFUSED)
            return
        reason, message = refused
        if conditions.put(status, COND_REFUSED, conditions.TRUE, reason, message, seen.now):
            self._rec.record(job, WARNING, COND_REFUSED, message)

    async def _delete_pod(self, meta: Obj) -> None:
        try:
            await self._w.delete(PODS, meta["name"], meta.get("namespace", ""))
        except (errors.NotFound, errors.Conflict):
            pass
        except errors.ApiError as exc:
            raise SyncError(f"deleting pods {meta['name']}: {exc.server_message}") from exc
        self._deleted.add(meta.get("uid", ""))

    async def _delete_launcher(self, meta: Obj) -> None:
        # Background: the Job's name is free at once for the one made from the new template, and the
        # garbage collector takes its pods, none of which has started.
        uid = meta.get("uid")
        try:
            await self._w.delete(JOBS, meta["name"], meta.get("namespace", ""), DeleteOptions.if_uid(uid))
        except (errors.NotFound, errors.Conflict):
            pass
        except errors.ApiError as exc:
            raise SyncError(f"deleting launcher Job {meta['name']}: {exc.server_message}") from exc
        self._deleted.add(uid or "")
