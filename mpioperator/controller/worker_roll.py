"""Template edits reaching a job's pods (`mpioperator.io/roll-workers-on-template-change`): what is done
when, and what is refused (docs/extensions.md "The worker roll in detail", decisions-local L14).

Upstream never touches a worker pod or the launcher Job once made (quirk #9): an edit reaches only pods
made later. A pod is made again to carry an edit, never changed: MPI cannot replace one rank under a
running mpirun, and a batch/v1 Job's pod template cannot be changed. So, for a job with the annotation:
- before its launcher has started, workers made from another worker template are deleted and made again
  (all at once), and a launcher Job made from another launcher template is deleted and made again;
- once the launcher runs, an edit restarts the whole job as one new attempt when the job also opted in to
  whole-job restarts and has one left (features/restarts.py); otherwise it is refused with the
  `TemplateChangeRefused` condition and one event, and the running pods keep their template.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Awaitable, Callable

from mpioperator.api import conveniences, names
from mpioperator.api import restarts as policy
from mpioperator.api.objects import Obj
from mpioperator.controller import conditions
from mpioperator.controller.child_state import launcher_done
from mpioperator.controller.children import RecentlyDeleted
from mpioperator.controller.decorators.worker_template import (
    launcher_template_hash,
    stamped_hash,
    stamped_launcher_hash,
    template_hash,
)
from mpioperator.controller.errors import SyncError
from mpioperator.controller.events import NORMAL, WARNING
from mpioperator.controller.ports import Listers, Recorder, Writer
from mpioperator.kube import errors
from mpioperator.kube.resources import JOBS, PODS

REASON_WORKERS_ROLLED = "WorkersRolled"
REASON_LAUNCHER_REMADE = "LauncherRecreated"
COND_REFUSED = "TemplateChangeRefused"
REASON_NO_RESTARTS = "LauncherAlreadyStarted"
REASON_LIMIT = "RestartLimitReached"


def launcher_started(launcher: Obj | None, launcher_pods: list[Obj]) -> bool:
    if launcher is None:
        return False
    status = launcher.get("status") or {}
    if status.get("succeeded") or status.get("failed"):
        return True
    return any((p.get("status") or {}).get("phase") not in (None, "Pending") for p in launcher_pods)


def _live(pods: list[Obj]) -> list[Obj]:
    return [p for p in pods if not (p.get("metadata") or {}).get("deletionTimestamp")]


def workers_to_roll(
    job: Obj, workers: list[Obj], launcher: Obj | None, launcher_pods: list[Obj]
) -> list[Obj]:
    """The worker pods to delete so they are made again from the current template; none unless the job
    asked for it and its launcher has not started. A worker without the stamp was made before the job
    opted in, from a template we cannot know, so it is rolled too."""
    if not conveniences.roll_workers(job) or launcher_started(launcher, launcher_pods):
        return []
    current = template_hash(job)
    return [pod for pod in _live(workers) if stamped_hash(pod) != current]


def _idle_while_suspended(launcher: Obj, launcher_pods: list[Obj]) -> bool:
    """A suspended launcher Job with no pod left running: whatever it ran before the suspension is over
    (an attempt it counted as failed included), so making it again costs nothing."""
    if not (launcher.get("spec") or {}).get("suspend") or launcher_done(launcher):
        return False
    return not any(
        (p.get("status") or {}).get("phase") in ("Pending", "Running") for p in _live(launcher_pods)
    )


def launcher_to_remake(job: Obj, launcher: Obj | None, launcher_pods: list[Obj]) -> bool:
    """Whether the launcher Job goes, to be made again from the current launcher template: the job asked
    for it, the Job was made from another template (or before the job opted in) and has not started, or
    is suspended with nothing running (a resume)."""
    if launcher is None or not conveniences.roll_workers(job):
        return False
    if launcher_started(launcher, launcher_pods) and not _idle_while_suspended(launcher, launcher_pods):
        return False
    return stamped_launcher_hash(launcher) != launcher_template_hash(job)


def running_edit(job: Obj, workers: list[Obj], launcher: Obj | None, launcher_pods: list[Obj]) -> str | None:
    """What was edited since the running attempt's pods were made ("the worker template", "the launcher
    template", or both), when the job asked for its edits to reach its pods and its launcher runs.

    Only a stamp of another template counts: a pod without one was made before the job opted in, from a
    template that cannot be known, and a guess must not cost a running job its work."""
    if launcher is None or not conveniences.roll_workers(job):
        return None
    if launcher_done(launcher) or not launcher_started(launcher, launcher_pods):
        return None
    attempt = policy.current_attempt(job)
    labelled = policy.labelled(job)
    if labelled and policy.attempt_of(launcher) != attempt:
        return None  # an earlier attempt's, which the restart step deletes
    current = template_hash(job)
    workers_edited = any(
        stamped_hash(p) not in (None, current)
        for p in _live(workers)
        if not labelled or policy.attempt_of(p) == attempt
    )
    stamp = stamped_launcher_hash(launcher)
    launcher_edited = stamp is not None and stamp != launcher_template_hash(job)
    if workers_edited and launcher_edited:
        return "the worker and launcher templates"
    if workers_edited:
        return "the worker template"
    return "the launcher template" if launcher_edited else None


def refusal(job: Obj, edited: str) -> tuple[str, str] | None:
    """The reason and message of a refused edit of a running job; None when a restart takes it."""
    meta = job["metadata"]
    head = f"MPIJob {meta.get('namespace', '')}/{meta['name']}: {edited} changed after the launcher started"
    if not policy.enabled(job):
        return REASON_NO_RESTARTS, (
            f"{head}; the running pods keep the template they were made from, since MPI cannot replace a "
            f"rank under a running mpirun. Set {policy.RESTART_POLICY} to restart the job as a whole on "
            "the new template, or suspend and resume it."
        )
    done = policy.restarts(job.get("status") or {})
    if done < policy.max_restarts(job):
        return None
    return REASON_LIMIT, (
        f"{head}; the job restarted {done} times, the most {policy.MAX_RESTARTS} allows, so the running "
        f"pods keep the template they were made from. Raise {policy.MAX_RESTARTS}, or suspend and resume "
        "the job."
    )


class Rolls:
    """The sync's two steps for the annotation: the roll before the launcher starts, and the refusal
    condition once it runs (the restart itself is features/restarts.py's)."""

    def __init__(
        self,
        listers: Listers,
        writer: Writer,
        recorder: Recorder,
        before_delete: Callable[[Obj, list[Obj]], Awaitable[None]] | None = None,
    ) -> None:
        self._l = listers
        self._w = writer
        self._rec = recorder
        self._deleted = RecentlyDeleted()
        self._before_delete = before_delete  # as the children step's: told before pods are deleted

    def _launcher_pods(self, launcher: Obj | None) -> list[Obj]:
        return self._l.pods.owned_by(launcher["metadata"].get("uid", "")) if launcher else []

    async def before_start(
        self, job: Obj, launcher: Obj | None, workers: list[Obj]
    ) -> tuple[bool, Obj | None]:
        """Delete the workers and launcher Job made from older templates: whether any went (nothing new
        is made in this sync then), and the launcher Job still there."""
        if launcher is not None and self._deleted.seen(launcher["metadata"].get("uid", "")):
            return True, None  # deleted by an earlier sync; the cache has not seen it go yet
        launcher_pods = self._launcher_pods(launcher)
        stale = [
            p
            for p in workers_to_roll(job, workers, launcher, launcher_pods)
            if not self._deleted.seen(p["metadata"].get("uid", ""))
        ]
        if stale and self._before_delete is not None:
            await self._before_delete(job, stale)
        for pod in stale:
            await self._delete_pod(pod["metadata"])
        if stale:
            pods = ", ".join(sorted(p["metadata"]["name"] for p in stale))
            message = f"Worker template changed: re-creating workers {pods}"
            self._rec.record(job, NORMAL, REASON_WORKERS_ROLLED, message)
        if launcher is None or not launcher_to_remake(job, launcher, launcher_pods):
            return bool(stale), launcher
        await self._delete_launcher(launcher["metadata"])
        message = f"Launcher template changed: re-creating launcher Job {names.launcher_name(job)}"
        self._rec.record(job, NORMAL, REASON_LAUNCHER_REMADE, message)
        return True, None

    def report(
        self,
        job: Obj,
        status: Obj,
        launcher: Obj | None,
        launcher_pods: list[Obj],
        workers: list[Obj],
        now: dt.datetime,
    ) -> None:
        """`TemplateChangeRefused` while an edit cannot reach the running pods; one Warning per message."""
        edited = running_edit(job, workers, launcher, launcher_pods)
        refused = None if edited is None or conditions.is_finished(status) else refusal(job, edited)
        if refused is None:
            conditions.drop(status, COND_REFUSED)
            return
        reason, message = refused
        if conditions.put(status, COND_REFUSED, conditions.TRUE, reason, message, now):
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
            await self._w.delete(
                JOBS,
                meta["name"],
                meta.get("namespace", ""),
                propagation_policy="Background",
                preconditions={"uid": uid} if uid else None,
            )
        except (errors.NotFound, errors.Conflict):
            pass
        except errors.ApiError as exc:
            raise SyncError(f"deleting launcher Job {meta['name']}: {exc.server_message}") from exc
        self._deleted.add(uid or "")
