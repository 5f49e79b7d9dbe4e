"""Whole-job restarts (docs/extensions.md, `mpioperator.io/restart-policy`): the sync's three steps.

1. `failure`: whether the current attempt has failed in a way the job's policy restarts; `edited`: whether
   a template edit is to reach the running attempt's pods (template_edits.py).
2. `restart`: count the restart in `status.restarts` with the `Restarting` condition, written with the
   cached resourceVersion and no retry over a newer object, so two leaders that saw the same failure
   count it once; its event is recorded only by the sync whose write went through. Then the attempt's
   children go.
3. `waiting`: nothing of the new attempt is made before `status.nextAttemptTime`, which the restart set
   after an exponential back-off (`delay`), so a worker that exits at once does not cost an attempt's
   writes every few seconds; the sync comes back at that time.
4. `clear_earlier`: every sync of an opted-in job deletes what is left of earlier attempts (labelled
   with another attempt, or unlabelled when the count is above 0) and reports whether any is still there;
   nothing of the new attempt is made before, so a worker's fixed name never answers for an old pod.

The count lives in the API server and the children's labels say which attempt they belong to, so a new
leader continues exactly where the old one stopped: a failure already counted is a failure of an
earlier attempt, whose pods are only deleted.
"""

from __future__ import annotations

import datetime as dt
from collections import OrderedDict
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

import structlog

from mpioperator.api import constants as api
from mpioperator.api import names
from mpioperator.api.extensions import restarts as policy
from mpioperator.api.extensions.launcher_log import COND_STALLED
from mpioperator.api.extensions.parsed import Extensions
from mpioperator.api.objects import Obj, json_copy
from mpioperator.api.ownership import is_controlled_by
from mpioperator.controller import conditions, template_edits
from mpioperator.controller.bounded import BoundedSet
from mpioperator.controller.builders.podspec import role_labels
from mpioperator.controller.errors import SyncError
from mpioperator.controller.events import WARNING, truncate_message
from mpioperator.controller.feature import ChildOperations, Feature, FeaturePorts, Stop
from mpioperator.controller.phase import PENDING
from mpioperator.controller.ports import Listers, Recorder, Writer
from mpioperator.controller.problems import worker_endings
from mpioperator.kube import errors
from mpioperator.kube.delete_options import DeleteOptions
from mpioperator.kube.resources import JOBS

log = structlog.get_logger(__name__)

REASON_RESTARTING = "MPIJobRestarting"
REASON_RESTARTED = "MPIJobRestarted"
# Status: the earliest time the current attempt's pods are made (docs/extensions.md).
NEXT_ATTEMPT_TIME = "nextAttemptTime"
# Jobs whose running workers are remembered, and pods remembered as deleted by the operator.
_SEEN_CAPACITY = 20_000


@dataclass(frozen=True, slots=True)
class Failure:
    """What ends the current attempt (a failure, or an edit it restarts for), in words for the condition
    and the event."""

    what: str


def _condition(launcher: Obj, cond_type: str) -> Obj | None:
    for cond in (launcher.get("status") or {}).get("conditions") or ():
        if cond.get("type") == cond_type and cond.get("status") == "True":
            return dict(cond)
    return None


def _has_condition(launcher: Obj, cond_type: str) -> bool:
    return _condition(launcher, cond_type) is not None


class Restarter:
    def __init__(
        self,
        listers: Listers,
        writer: Writer,
        recorder: Recorder,
        children: ChildOperations,
        write_status: Callable[[Obj, Obj], Awaitable[bool]],
    ) -> None:
        self._l = listers
        self._w = writer
        self._rec = recorder
        self._children = children
        # The sync's one status-write path (status_writer.write_if_changed): a Conflict reads the newer job
        # and ends the sync, whose next run sees whether this failure was counted already (L42).
        self._write_status = write_status
        # The running attempt's workers last seen in the cache, per job (uid -> (attempt, {pod uid: name})),
        # and the pods the operator itself deleted: a worker that leaves the cache without the operator
        # deleting it was taken away as surely as one seen terminating. A drain's eviction of a worker whose
        # sshd ends at once can be gone within one sync, and the pod made again under a launcher that has
        # lost its rank. Kept in memory: a new leader knows only what it sees terminating.
        self._seen: OrderedDict[str, tuple[int, dict[str, str]]] = OrderedDict()
        self._deleted_by_us = BoundedSet[str](_SEEN_CAPACITY)

    def deleted_by_the_operator(self, pods: list[Obj]) -> None:
        for pod in pods:
            self._deleted_by_us.add(pod["metadata"].get("uid", ""))

    def _vanished(self, job: Obj, current: list[Obj]) -> list[str]:
        """Workers of the running attempt seen by an earlier sync and gone from the cache since, which the
        operator did not delete; remembers the ones there now."""
        uid = job["metadata"].get("uid", "")
        attempt = policy.current_attempt(job)
        seen_attempt, seen = self._seen.pop(uid, (attempt, {}))
        # Every cached worker of the attempt, also those past a lowered replica count that the children
        # step has yet to delete (the operator's own deletes, said through before_delete).
        ns = job["metadata"].get("namespace", "")
        listed = self._l.pods.select(ns, role_labels(job, api.ROLE_WORKER))
        cached = [w for w in listed if policy.attempt_of(w) == attempt and is_controlled_by(w, job)]
        present = {w["metadata"].get("uid", ""): w["metadata"]["name"] for w in [*current, *cached]}
        gone = []
        if seen_attempt == attempt:
            gone = [
                name for pod, name in seen.items() if pod not in present and not self._deleted_by_us.seen(pod)
            ]
        self._seen[uid] = (attempt, present)
        while len(self._seen) > _SEEN_CAPACITY:
            self._seen.popitem(last=False)
        return sorted(gone)

    def failure(self, job: Obj, ext: Extensions) -> Failure | None:
        """The current attempt's failure that the job's policy restarts, if any (None once the limit is
        reached: the attempt then ends as upstream's would)."""
        if not ext.restarts.enabled:
            return None
        status = job.get("status") or {}
        if policy.restarts(status) >= ext.restarts.max_restarts:
            return None
        launcher, current = self._attempt(job)
        if launcher is not None and _has_condition(launcher, "Complete"):
            return None  # the attempt succeeded: a worker that ends now is not worth running it again
        stalled = conditions.find(status, COND_STALLED)
        if stalled is not None and stalled.get("status") == "True":
            return Failure(f"it stalled: {stalled.get('message') or 'no new launcher output'}")
        failed = [w for w in current if (w.get("status") or {}).get("phase") == "Failed"]
        if failed:
            return Failure(self._describe_workers(failed))
        if conditions.is_true(status, api.COND_RUNNING):
            # A worker deleted under a running attempt (a drain's eviction, a preemption, a user) leaves
            # mpirun short of a rank: upstream would make the pod again under a launcher that cannot use it.
            gone = [w["metadata"]["name"] for w in current if w["metadata"].get("deletionTimestamp")]
            gone += self._vanished(job, current)
            if gone:
                more = " and more" if gone[3:] else ""
                return Failure(f"worker {', '.join(gone[:3])}{more} was deleted")
        failed_launcher = None if launcher is None else _condition(launcher, "Failed")
        if ext.restarts.restarts_launcher and launcher is not None and failed_launcher is not None:
            reason = failed_launcher.get("reason") or api.REASON_FAILED
            return Failure(f"launcher {launcher['metadata']['name']} failed ({reason})")
        return None

    def edited(self, job: Obj, ext: Extensions) -> Failure | None:
        """An edit of a template that the running attempt's pods were not made from, which the job asked
        to reach them (`roll-workers-on-template-change`) and a whole-job restart can bring: the attempt's
        pods then go and the next attempt's are made from the new templates (template_edits.py)."""
        if not ext.restarts.enabled or not ext.conveniences.roll_workers:
            return None
        if policy.restarts(job.get("status") or {}) >= ext.restarts.max_restarts:
            return None  # refused with a condition instead (template_edits.refusal)
        launcher, current = self._attempt(job)
        launcher_pods = self._l.pods.owned_by(launcher["metadata"].get("uid", "")) if launcher else []
        edited = template_edits.running_edit(job, ext, current, launcher, launcher_pods)
        return None if edited is None else Failure(f"{edited} changed")

    def _attempt(self, job: Obj) -> tuple[Obj | None, list[Obj]]:
        """The running attempt's launcher Job (None when there is none of it) and its workers."""
        attempt = policy.current_attempt(job)
        ns = job["metadata"].get("namespace", "")
        launcher = self._l.jobs.get(ns, names.launcher_name(job))
        if launcher is not None and (
            policy.attempt_of(launcher) != attempt or not is_controlled_by(launcher, job)
        ):
            launcher = None  # an earlier attempt's, still going (or not ours, which the sync reports)
        workers = self._children.present_workers(job)
        return launcher, [w for w in workers if policy.attempt_of(w) == attempt and is_controlled_by(w, job)]

    @staticmethod
    def _describe_workers(failed: list[Obj]) -> str:
        evicted = [w for w in failed if (w.get("status") or {}).get("reason") == "Evicted"]
        if evicted:
            return "worker " + ", ".join(w["metadata"]["name"] for w in evicted[:3]) + " was evicted"
        endings = worker_endings(failed)
        return endings or "worker " + ", ".join(w["metadata"]["name"] for w in failed[:3]) + " failed"

    async def restart(
        self, cached: Obj, job: Obj, ext: Extensions, failure: Failure, now: dt.datetime
    ) -> None:
        """Count the restart in the API server, say so once, and delete the failed attempt's children."""
        meta = job["metadata"]
        ns, name = meta.get("namespace", ""), meta["name"]
        done = policy.restarts(job.get("status") or {}) + 1
        limit = ext.restarts.max_restarts
        message = truncate_message(
            f"MPIJob {ns}/{name} restarts as a whole (restart {done} of at most {limit}): {failure.what}"
        )
        status = json_copy(job.get("status") or {})
        status["restarts"] = done
        delay = self.delay(job, ext, now)
        due = now + dt.timedelta(seconds=delay)
        # Whole seconds in status: rounded up, so the wait is never shorter than the back-off.
        due += dt.timedelta(microseconds=(1_000_000 - due.microsecond) % 1_000_000)
        next_attempt = conditions.format_time(due)
        status["restartDelaySeconds"] = delay
        status[NEXT_ATTEMPT_TIME] = next_attempt
        # The new attempt starts after its back-off, as a resumed job starts at the resume: the worker
        # start-up deadline counts from there.
        status["startTime"] = next_attempt
        # Upstream's pairing: Restarting replaces Running, and Running replaces it again once the new
        # attempt runs.
        conditions.set_condition(
            status, conditions.new_condition(api.COND_RESTARTING, "True", REASON_RESTARTING, message, now)
        )
        status["phase"] = PENDING
        if conditions.is_true(status, COND_STALLED):  # the new attempt is judged afresh
            conditions.put(
                status, COND_STALLED, "False", REASON_RESTARTED, "The job restarted as a whole.", now
            )
        if not await self._write_status(cached, status):
            return  # the job is gone: nothing is left to restart
        log.info(
            "restarting MPIJob as a whole",
            job=f"{ns}/{name}",
            restart=done,
            why=failure.what,
            next_attempt=next_attempt,
        )
        self._rec.record(job, WARNING, REASON_RESTARTING, message)
        job["status"] = status
        await self.clear_earlier(job, ext)

    @staticmethod
    def delay(job: Obj, ext: Extensions, now: dt.datetime) -> int:
        """Seconds from a restart now to its new attempt: the wait before the failed attempt doubled when
        that attempt failed within RESET_AFTER_SECONDS of its start, else the first wait."""
        status = job.get("status") or {}
        started = conditions.parse_time(status.get("startTime"))
        quick = started is not None and (now - started).total_seconds() < policy.RESET_AFTER_SECONDS
        return ext.restarts.next_delay(policy.restart_delay(status), quick)

    @staticmethod
    def waiting(job: Obj, now: dt.datetime) -> float | None:
        """Seconds left before the current attempt may start (None when it may): read from the status, so
        a new leader keeps to the back-off its predecessor wrote."""
        if policy.current_attempt(job) == 0:
            return None
        try:
            due = conditions.parse_time((job.get("status") or {}).get(NEXT_ATTEMPT_TIME))
        except ValueError:
            return None  # not a time (the CRD's format refuses one): no wait rather than a stuck job
        if due is None:
            return None
        left = (due - now).total_seconds()
        return left if left > 0 else None

    async def clear_earlier(self, job: Obj, ext: Extensions) -> bool:
        """Delete the children of earlier attempts; True while any of them is still there."""
        if not ext.restarts.labelled(job):
            return False
        attempt = policy.current_attempt(job)
        ns = job["metadata"].get("namespace", "")
        left = False
        launcher = self._l.jobs.get(ns, names.launcher_name(job))
        earlier = launcher is not None and policy.attempt_of(launcher) != attempt
        if launcher is not None and earlier and is_controlled_by(launcher, job):
            left = True
            if not launcher["metadata"].get("deletionTimestamp"):
                await self._delete_launcher(launcher, ns)
        stale = [
            pod
            for role in (api.ROLE_WORKER, api.ROLE_LAUNCHER)
            for pod in self._l.pods.select(ns, role_labels(job, role))
            if policy.attempt_of(pod) != attempt and is_controlled_by_job_or_launcher(pod, job, launcher)
        ]
        await self._children.withdraw(job, ext, stale)
        for pod in stale:
            left = True
            await self._children.delete_pod(pod)
        return left

    async def _delete_launcher(self, launcher: Obj, ns: str) -> None:
        # Background: the Job goes at once (its name is free for the next attempt's) and the garbage
        # collector takes its pods, which clear_earlier deletes too, so no collector is waited for.
        meta = launcher["metadata"]
        try:
            await self._w.delete(JOBS, meta["name"], ns, DeleteOptions.if_uid(meta.get("uid")))
        except (errors.NotFound, errors.Conflict):
            pass
        except errors.ApiError as exc:
            raise SyncError(f"deleting an earlier attempt's launcher Job: {exc.server_message}") from exc

    @staticmethod
    def note_exhausted(job: Obj, ext: Extensions, detail: str) -> str:
        """The failure detail of a job that restarted as often as it may: says so after the pods' words."""
        done = policy.restarts(job.get("status") or {})
        if not ext.restarts.enabled or done == 0:
            return detail
        note = f"restarted {done} times, the most {policy.MAX_RESTARTS} allows"
        return f"{detail}; {note}" if detail else note

    @staticmethod
    def settle(status: Obj, now: dt.datetime) -> None:
        """The Restarting condition is over once the new attempt runs or the job has finished."""
        restarting = conditions.find(status, api.COND_RESTARTING)
        if restarting is None or restarting.get("status") != "True":
            return
        if conditions.is_finished(status):
            conditions.set_condition(
                status,
                conditions.new_condition(
                    api.COND_RESTARTING, "False", REASON_RESTARTED, "The job finished.", now
                ),
            )


def is_controlled_by_job_or_launcher(pod: Obj, job: Obj, launcher: Obj | None) -> bool:
    """A worker is the job's own pod; a launcher pod belongs to a launcher Job (of any attempt: an
    earlier Job may be gone from the cache already, while its pods are not). The labels name the job."""
    if is_controlled_by(pod, job):
        return True
    role = ((pod.get("metadata") or {}).get("labels") or {}).get(api.LABEL_JOB_ROLE)
    return role == api.ROLE_LAUNCHER


# While an earlier attempt's children go, the job is looked at again this often (their delete events
# enqueue it too; this covers a launcher pod whose Job is gone, which enqueues nothing).
RESTART_RECHECK_SECONDS = 2.0


class RestartsFeature(Feature):
    def __init__(self, ports: FeaturePorts) -> None:
        self._restarter = Restarter(
            ports.listers, ports.writer, ports.recorder, ports.children, ports.write_status
        )

    async def before_children(
        self, cached: Obj, job: Obj, ext: Extensions, now: dt.datetime, suspended: bool
    ) -> Stop | None:
        """Nothing of a new attempt is made while anything of an earlier one is left."""
        if not ext.restarts.labelled(job):
            return None
        failure = None if suspended else self._restarter.failure(job, ext) or self._restarter.edited(job, ext)
        if failure is not None:
            await self._restarter.restart(cached, job, ext, failure, now)
            return Stop(RESTART_RECHECK_SECONDS, new_attempt=True)
        if await self._restarter.clear_earlier(job, ext):
            return Stop(RESTART_RECHECK_SECONDS)
        if not suspended and (left := self._restarter.waiting(job, now)) is not None:
            return Stop(left)  # the restart's back-off (status.nextAttemptTime)
        return None

    async def before_delete(self, job: Obj, ext: Extensions, pods: list[Obj]) -> None:
        self._restarter.deleted_by_the_operator(pods)

    def failure_detail(self, job: Obj, ext: Extensions, detail: str) -> str:
        return self._restarter.note_exhausted(job, ext, detail)

    def amend_status(self, status: Obj, now: dt.datetime) -> None:
        self._restarter.settle(status, now)
