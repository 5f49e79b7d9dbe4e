"""One reconcile of one MPIJob, in upstream's order, with our deliberate fixes (docs/decisions-local.md).

The handler reads only from caches and writes only what differs from them, so a converged job
costs no API request. A returned `SyncResult.requeue_after` asks for a timed revisit (the TTL, a held
job's re-check, a crash-loop window or the worker start-up deadline).

Beyond upstream (docs/extensions.md): a child the API server refuses for good holds the job with a
condition instead of a retry loop (decisions-local L11), and the status says what is wrong with the
job's pods (report.py).
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime as dt
from collections.abc import Callable
from dataclasses import dataclass

import structlog

from mpioperator.api import accessors, names, restarts
from mpioperator.api import constants as api
from mpioperator.api.defaults import set_defaults
from mpioperator.api.objects import Obj
from mpioperator.api.validation import aggregate_message, validate_mpijob, validate_worker_bound
from mpioperator.cache.keys import split_key
from mpioperator.controller import child_state, children, conditions, host_wait, report, status_writer
from mpioperator.controller.bounded import BoundedSet
from mpioperator.controller.builders.configmap import max_worker_replicas
from mpioperator.controller.conditions import format_time
from mpioperator.controller.conveniences import SECRET_RECHECK_SECONDS, Conveniences
from mpioperator.controller.decorators.host_waiter import DEFAULT_IMAGE as DEFAULT_HOST_WAITER_IMAGE
from mpioperator.controller.decorators.host_waiter import HostWaiter
from mpioperator.controller.errors import StatusConflict
from mpioperator.controller.events import NORMAL, WARNING
from mpioperator.controller.exec_agent import ExecAgent
from mpioperator.controller.metrics import JobMetrics
from mpioperator.controller.phase import PENDING
from mpioperator.controller.pod_groups import PodGroupReconciler
from mpioperator.controller.ports import Listers, Recorder, Writer
from mpioperator.controller.rejections import ChildRejected, Holds
from mpioperator.controller.restarts import Restarter
from mpioperator.controller.said_before import SaidBefore
from mpioperator.controller.status import StatusEvent, compute_status
from mpioperator.controller.worker_roll import Rolls
from mpioperator.kube import errors
from mpioperator.kube.resources import MPIJOBS
from mpioperator.podgroup.backend import PodGroupBackend
from mpioperator.podgroup.null import NullBackend

log = structlog.get_logger(__name__)

INVALID_CONDITION = "Invalid"
# While an earlier attempt's children go, the job is looked at again this often (their delete events
# enqueue it too; this covers a launcher pod whose Job is gone, which enqueues nothing).
RESTART_RECHECK_SECONDS = 2.0


@dataclass(frozen=True, slots=True)
class SyncResult:
    requeue_after: float | None = None


@dataclass(slots=True)
class SyncSettings:
    cluster_domain: str = ""
    # --worker-startup-deadline-seconds: 0 leaves it to each job's annotation (off by default).
    worker_startup_deadline_seconds: int = 0
    # --exec-agent: the kubectl delivery image; None when jobs may not ask for the exec launch agent.
    exec_agent_image: str | None = None
    # The image of the launcher's wait-for-hosts init container (mpioperator.io/wait-for-ssh-port).
    host_waiter_image: str = DEFAULT_HOST_WAITER_IMAGE
    # --max-worker-replicas: a job with more workers is Invalid (its hostfile would not fit a ConfigMap).
    # This default is the flag's without a cluster domain; the operator passes the flag's value.
    max_worker_replicas: int = max_worker_replicas()
    # --max-restarts-cap: the most mpioperator.io/max-restarts a job may ask for.
    max_restarts_cap: int = restarts.DEFAULT_MAX_RESTARTS_CAP


@dataclass(slots=True)
class _Children:
    """What the children step left: the launcher and workers to report on, and why it stopped, if it did."""

    launcher: Obj | None
    workers: list[Obj]
    rejection: ChildRejected | None = None
    held_for: float | None = None
    waits_for_user_secret: bool = False  # mpioperator.io/ssh-secret names a Secret not (yet) usable

    @property
    def held(self) -> bool:
        return self.held_for is not None


# Which jobs already had a one-shot event (uid, what), so retries do not repeat it.
_Once = BoundedSet[tuple[str, str]]


def _complete_upstream_eviction(status: Obj) -> None:
    """Deliberately unlike upstream, for a job evicted under upstream, which leaves it Failed without a
    completionTime: it is finished, and its completionTime is when it failed, so it is not synced as a running
    job again (which would create its missing workers)."""
    failed = conditions.find(status, api.COND_FAILED)
    if status.get("completionTime") or failed is None or failed.get("status") != "True":
        return
    if failed.get("reason") == api.REASON_EVICTED:
        status["completionTime"] = failed.get("lastTransitionTime") or failed.get("lastUpdateTime")


class JobSyncer:
    def __init__(
        self,
        listers: Listers,
        writer: Writer,
        recorder: Recorder,
        metrics: JobMetrics,
        *,
        utcnow: Callable[[], dt.datetime],
        settings: SyncSettings | None = None,
        backend: PodGroupBackend | None = None,
    ) -> None:
        self._l = listers
        self._w = writer
        self._rec = recorder
        self._metrics = metrics
        self._utcnow = utcnow
        self._settings = settings or SyncSettings()
        self._once = _Once()
        self._recent = status_writer.RecentStatusWrites()
        self._said = SaidBefore()
        self._holds = Holds()
        self._reporter = report.Reporter(self._settings.worker_startup_deadline_seconds)
        self._counts_settle = report.CountsSettle()
        backend = backend or NullBackend()
        waiter = HostWaiter(self._settings.host_waiter_image, self._settings.worker_startup_deadline_seconds)
        self._exec_agent = ExecAgent(listers, writer, recorder, self._settings.exec_agent_image)
        self._children = children.ChildReconciler(
            listers,
            writer,
            recorder,
            self._settings.cluster_domain,
            backend,
            waiter,
            launcher_decorator=self._exec_agent.launcher_decorator,
            before_delete=self._exec_agent.withdraw,
        )
        self._conveniences = Conveniences(listers, writer, recorder)  # docs/extensions.md
        self._pod_groups = PodGroupReconciler(
            backend, listers.pod_groups, listers.priority_classes, writer, recorder
        )
        self._restarter = Restarter(
            listers,
            writer,
            recorder,
            self._children,
            lambda cached, status: self._write_status(cached, status, []),
        )
        # Edits reaching the pods (L14); the agent's Role lets go of a rolled worker before it is deleted.
        self._rolls = Rolls(listers, writer, recorder, self._exec_agent.withdraw)

    def has_job(self, namespace: str, name: str) -> bool:
        return self._l.mpijobs.get(namespace, name) is not None

    async def sync(self, key: str) -> SyncResult:
        try:
            namespace, name = split_key(key)
        except ValueError:
            log.error("invalid resource key", key=key)  # dropped without a retry, as upstream does
            return SyncResult()
        cached = self._l.mpijobs.get(namespace, name)
        if cached is None:
            return SyncResult()
        cached = self._recent.freshest(cached)
        job = set_defaults(cached)
        managed_by = accessors.managed_by(job)
        if managed_by is not None and managed_by != api.KUBEFLOW_JOB_CONTROLLER:
            log.debug("skipping MPIJob managed by a custom controller", key=key, managed_by=managed_by)
            return SyncResult()
        if job["metadata"].get("deletionTimestamp"):
            await self._exec_agent.release(cached, job)  # the exec agent's grants revoked first
            return SyncResult()
        guarded = await self._exec_agent.guard(cached, job)  # its finalizer on (or off) the job
        if guarded is not cached:
            self._recent.remember(cached, guarded)
            cached = guarded
        if not await self._validate(cached, job):
            await self._exec_agent.follow(job, [])
            return SyncResult()
        return await self._sync_valid(cached, job)

    async def _validate(self, cached: Obj, job: Obj) -> bool:
        problems = (
            validate_mpijob(job)
            + validate_worker_bound(job, self._settings.max_worker_replicas)
            + restarts.validate_cap(job, self._settings.max_restarts_cap)
        )
        if not problems:
            if conditions.find(job.get("status") or {}, INVALID_CONDITION) is not None:
                # The user fixed the spec: drop our condition so the job reads like any other.
                job["status"]["conditions"] = [
                    c for c in job["status"]["conditions"] if c.get("type") != INVALID_CONDITION
                ]
            return True
        message = f"Found validation errors: {aggregate_message(problems)}"
        status = job.setdefault("status", {})
        current = conditions.find(status, INVALID_CONDITION) or {}
        if current.get("status") == "True" and current.get("message") == message:
            return False
        # Not set_condition: it keeps the old message when status and reason are unchanged, and the
        # condition must say what is wrong now.
        condition = conditions.new_condition(
            INVALID_CONDITION, "True", api.REASON_VALIDATION_ERROR, message, self._utcnow()
        )
        if current.get("status") == "True":
            condition["lastTransitionTime"] = current.get("lastTransitionTime")
        others = [c for c in status.get("conditions") or () if c.get("type") != INVALID_CONDITION]
        status["conditions"] = [*others, condition]
        status["phase"] = PENDING
        warning = StatusEvent(WARNING, api.REASON_VALIDATION_ERROR, message)
        for event in self._said.unsaid(job["metadata"].get("uid", ""), [warning]):
            self._rec.record(job, event.type, event.reason, event.message)
        await self._write_status(cached, status, [warning])
        return False

    async def _sync_valid(self, cached: Obj, job: Obj) -> SyncResult:
        ns, name = job["metadata"].get("namespace", ""), job["metadata"]["name"]
        uid = job["metadata"].get("uid", "")
        status: Obj = job.setdefault("status", {})
        now = self._utcnow()
        if not status.get("conditions"):
            message = f"MPIJob {ns}/{name} is created."
            announced = self._announced_before(uid, status)
            status["conditions"] = [
                conditions.new_condition(api.COND_CREATED, "True", api.REASON_CREATED, message, now)
            ]
            if self._once.first((uid, "created")) and not announced:
                self._rec.record(job, NORMAL, api.REASON_CREATED, message)
                self._metrics.created.inc()

        _complete_upstream_eviction(status)
        if conditions.is_finished(status) and status.get("completionTime"):
            return await self._sync_finished(cached, job)

        suspended = accessors.suspended(job)
        if not status.get("startTime") and not suspended:
            status["startTime"] = format_time(now)

        if restarts.labelled(job):
            # Ours (docs/extensions.md): a whole-job restart, and nothing of a new attempt made while
            # anything of an earlier one is left.
            failure = None if suspended else self._restarter.failure(job) or self._restarter.edited(job)
            if failure is not None:
                await self._restarter.restart(cached, job, failure, now)
                self._reporter.forget(uid)
                return SyncResult(requeue_after=RESTART_RECHECK_SECONDS)
            if await self._restarter.clear_earlier(job):
                return SyncResult(requeue_after=RESTART_RECHECK_SECONDS)
            if not suspended and (left := self._restarter.waiting(job, now)) is not None:
                return SyncResult(requeue_after=left)  # the restart's back-off (status.nextAttemptTime)

        step = await self._reconcile_children(job, suspended=suspended, now=now)
        launcher = step.launcher
        if suspended:
            await self._clean_up(job, status)
        await self._exec_agent.follow(job, step.workers)  # also when held, refused or suspended

        launcher_pods = self._l.pods.owned_by(launcher["metadata"].get("uid", "")) if launcher else []
        observed_workers = self._observed_workers(job, step, suspended)
        observed = self._reporter.observe(job, launcher_pods, observed_workers, now)
        result = compute_status(
            job,
            launcher=launcher,
            launcher_pods=launcher_pods,
            workers=step.workers,
            now=now,
            failure_detail=self._restarter.note_exhausted(job, observed.failure_detail),
            deadline_missed=observed.deadline.message if observed.deadline.expired else "",
        )
        events = [
            *result.events,
            *report.rejection(result.status, step.rejection, cleared=not step.held, now=now),
        ]
        self._restarter.settle(result.status, now)
        events += self._reporter.finish(result.status, observed, suspended=suspended, now=now)
        for event in self._said.unsaid(uid, events):
            self._rec.record(job, event.type, event.reason, event.message)
        self._conveniences.debug_status(job, result.status, launcher, now)
        self._rolls.report(job, result.status, launcher, launcher_pods, observed_workers, now)
        held_back = self._counts_settle.wait(uid, cached.get("status") or {}, result.status, now.timestamp())
        if held_back is None:
            await self._write_status(cached, result.status, events)
        # After the write: a Conflict ends the sync, and the counts are the next sync's (L42).
        self._observe(job, cached, result.status, launcher)
        if not self.has_job(ns, name):
            # Deleted while this sync awaited its writes: the delete handler has already forgotten the
            # job's series, and those just observed would otherwise stay for good.
            empty = not self._l.mpijobs.select(ns, {})
            self._metrics.forget_deleted(ns, name, namespace_empty=empty)
        secret_recheck = SECRET_RECHECK_SECONDS if step.waits_for_user_secret else None
        waits = [
            w for w in (step.held_for, observed.recheck_after, held_back, secret_recheck) if w is not None
        ]
        return SyncResult(requeue_after=min(waits) if waits else None)

    async def _reconcile_children(self, job: Obj, *, suspended: bool, now: dt.datetime) -> _Children:
        """Upstream's children step, unless the job is held after a refusal (L11), with our extensions'
        hooks (docs/extensions.md): debug mode's end, the user's own SSH Secret, the worker roll (L14)."""
        meta = job["metadata"]
        uid, generation = meta.get("uid", ""), int(meta.get("generation") or 0)
        clock = now.timestamp()
        workers: list[Obj] = []
        launcher: Obj | None = None
        done = waits_for_secret = rolled = renewing = agent_refused = False
        try:
            launcher = self._children.launcher(job)
            await self._conveniences.end_debug_mode(job, launcher)
            if renewing := await self._conveniences.renew_launcher_for_resume(job, launcher):
                launcher = None
            done = launcher is not None and child_state.launcher_done(launcher)
            held_for = self._holds.remaining(uid, generation, clock)
            if held_for is not None:
                return _Children(launcher, self._cached_workers(job, done, suspended), held_for=held_for)
            if not done:
                waits_for_secret = await self._shared_children(job, now)
                # Ours: the exec launch agent's RBAC before any pod; no pods when it is not allowed.
                agent_refused = not await self._exec_agent.prepare(job, job["status"], now)
                if not suspended and not waits_for_secret and not agent_refused:
                    if self._pod_groups.enabled:
                        # Before the workers, so their scheduler finds the gang already defined.
                        # A suspended launcher Job (a resume under WaitForWorkersReady) has no pod yet.
                        running = launcher is not None and not launcher.get("spec", {}).get("suspend")
                        await self._pod_groups.get_or_create(job, launcher_exists=running)
                    workers = await self._children.workers(job)
                    await self._exec_agent.grant(job, workers)
                    rolled, launcher = await self._rolls.before_start(job, launcher, workers)
                held = waits_for_secret or rolled or renewing or agent_refused
                may_create = not held and child_state.may_create_launcher(job, workers)
                if launcher is None and may_create:
                    launcher = await self._children.create_launcher(job)
                    self._conveniences.launcher_created(job, launcher)
                elif launcher is None:
                    log.debug(
                        "waiting for workers to be ready", job=f"{meta.get('namespace')}/{meta['name']}"
                    )
            if launcher is not None:
                launcher = await self._children.sync_launcher_suspension(
                    job, launcher, suspended, may_resume=child_state.may_create_launcher(job, workers)
                )
        except ChildRejected as rejection:
            held_for = self._holds.hold(uid, generation, clock)
            log.info(
                "child refused; job held", job=meta["name"], reason=rejection.reason, error=str(rejection)
            )
            made = workers or self._cached_workers(job, done, suspended)  # the cache may lag this sync's
            return _Children(launcher, made, rejection, held_for)
        self._holds.release(uid)
        return _Children(launcher, workers, waits_for_user_secret=waits_for_secret)

    async def _shared_children(self, job: Obj, now: dt.datetime) -> bool:
        """The Service, ConfigMap and SSH Secret; True when the job waits for the user's own Secret.

        A new job's three are created together: none needs another, and its first sync then waits one
        round trip for them instead of three (decisions-local L21). Once any of them exists they are seen
        to one after another, as upstream does, so an object in the way that is not ours stops the sync before
        the next is touched. A failure among the three made together is raised as upstream would have
        met it first."""
        if not self._children.none_shared_cached(job):
            await self._children.service(job)
            await self._children.config_map(job)
            return await self._conveniences.ssh_secret(job, job["status"], now, self._children)
        outcomes = await asyncio.gather(
            self._children.service(job),
            self._children.config_map(job),
            self._conveniences.ssh_secret(job, job["status"], now, self._children),
            return_exceptions=True,
        )
        for outcome in outcomes:
            if isinstance(outcome, BaseException):
                raise outcome
        return outcomes[2] is True

    async def _write_status(self, cached: Obj, status: Obj, events: list[StatusEvent]) -> bool:
        """The one path of the job's status to the API server: write the status computed from `cached`
        unless it has it (True if written); on a Conflict the sync ends (L42), and the next one does not
        record `events` again."""
        try:
            return await status_writer.write_if_changed(self._w, cached, status, self._recent)
        except StatusConflict:
            self._said.keep(cached["metadata"].get("uid", ""), events)
            raise

    def _announced_before(self, uid: str, status: Obj) -> bool:
        """Whether a sync before this process's recorded the job's MPIJobCreated (L42): its status is still
        empty, as a sync that fails leaves it, yet the caches hold a child of the job, which only a sync
        past the Created step makes (an earlier leader's, say)."""
        if any(status.values()):
            return False
        listers = (self._l.services, self._l.config_maps, self._l.secrets, self._l.jobs, self._l.pods)
        return any(lister.owned_by(uid) for lister in listers)

    def _cached_workers(self, job: Obj, done: bool, suspended: bool) -> list[Obj]:
        """The workers upstream's status step counts when none were made this sync: none when the launcher
        is done or the job suspended (as upstream), else those the cache has."""
        if done or suspended:
            return []
        return [p for p in self._children.existing_workers(job) if p is not None]

    def _observed_workers(self, job: Obj, step: _Children, suspended: bool) -> list[Obj]:
        """The workers to say what is wrong with: those of this sync, else the cache's (a done launcher)."""
        if suspended:
            return []
        return step.workers or [p for p in self._children.existing_workers(job) if p is not None]

    async def _sync_finished(self, cached: Obj, job: Obj) -> SyncResult:
        """A finished job is only cleaned up: nothing is created, and once clean nothing is written."""
        status = job["status"]
        policy = accessors.clean_pod_policy(job)
        if policy in (api.CLEAN_POD_POLICY_ALL, api.CLEAN_POD_POLICY_RUNNING):
            await self._clean_up(job, status)
        if policy == api.CLEAN_POD_POLICY_ALL or self._launcher_gave_up(job):
            await self._children.stop_launcher(job)
        await self._exec_agent.follow(job, [])
        await self._write_status(cached, status, [])
        return await self._expire(job)

    def _launcher_gave_up(self, job: Obj) -> bool:
        """Whether the launcher's wait-for-hosts gave up: its pod would only wait again (host_wait.py)."""
        launcher = self._l.jobs.get(job["metadata"]["namespace"], names.launcher_name(job))
        if launcher is None:
            return False
        return bool(host_wait.gave_up(self._l.pods.owned_by(launcher["metadata"].get("uid", ""))))

    async def _clean_up(self, job: Obj, status: Obj) -> None:
        """upstream's cleanUpWorkerPods: worker pods per cleanPodPolicy, then the gang's PodGroup."""
        await self._children.clean_up_workers(job, status)
        await self._pod_groups.delete(job)

    async def _expire(self, job: Obj) -> SyncResult:
        """Deliberately unlike upstream: after ttlSecondsAfterFinished the MPIJob itself goes, not only its
        launcher."""
        ttl = accessors.ttl_seconds_after_finished(job)
        finished = conditions.parse_time(job["status"].get("completionTime"))
        if ttl is None or finished is None:
            return SyncResult()
        remaining = (finished + dt.timedelta(seconds=ttl) - self._utcnow()).total_seconds()
        if remaining > 0:
            return SyncResult(requeue_after=remaining)
        meta = job["metadata"]
        # Gone already (404), or a new job of that name that the uid precondition protects (409): either
        # way the job this TTL was for no longer exists, and nothing is left to retry.
        with contextlib.suppress(errors.NotFound, errors.Conflict):
            await self._w.delete(
                MPIJOBS,
                meta["name"],
                meta.get("namespace"),
                preconditions={"uid": meta.get("uid")} if meta.get("uid") else None,
            )
        return SyncResult()

    def _observe(self, job: Obj, cached: Obj, new_status: Obj, launcher: Obj | None) -> None:
        ns = job["metadata"].get("namespace", "")
        if launcher is not None:
            self._metrics.job_info.labels(launcher=names.launcher_name(job), namespace=ns).set(1)
        old = cached.get("status") or {}
        start = conditions.parse_time(new_status.get("startTime"))
        for cond_type, result in ((api.COND_SUCCEEDED, "succeeded"), (api.COND_FAILED, "failed")):
            if conditions.is_true(new_status, cond_type) and not conditions.is_true(old, cond_type):
                if cond_type == api.COND_SUCCEEDED:
                    self._metrics.successful.inc()
                elif (conditions.find(new_status, api.COND_FAILED) or {}).get("reason") != api.REASON_EVICTED:
                    self._metrics.failed.inc()
                end = conditions.parse_time(new_status.get("completionTime")) or self._utcnow()
                if start is not None:
                    self._metrics.job_duration.labels(namespace=ns, result=result).observe(
                        max(0.0, (end - start).total_seconds())
                    )
        if conditions.is_true(new_status, api.COND_RUNNING) and not conditions.is_true(old, api.COND_RUNNING):
            created = conditions.parse_time(job["metadata"].get("creationTimestamp"))
            if created is not None:
                self._metrics.time_to_running.labels(namespace=ns).observe(
                    max(0.0, (self._utcnow() - created).total_seconds())
                )
