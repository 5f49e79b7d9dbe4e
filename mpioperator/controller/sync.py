"""One reconcile of one MPIJob, in upstream's order, with our deliberate fixes (docs/decisions-local.md).

The handler reads only from caches and writes only what differs from them, so a converged job
costs no API request. A returned `SyncResult.requeue_after` asks for a timed revisit (the TTL, a held
job's re-check, a crash-loop window or the worker start-up deadline).

Beyond upstream (docs/extensions.md): a child the API server refuses for good holds the job with a
condition instead of a retry loop (decisions-local L11), and the status says what is wrong with the
job's pods (report.py).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from dataclasses import dataclass, field

import structlog

from mpioperator.api import accessors
from mpioperator.api import constants as api
from mpioperator.api.defaults import set_defaults
from mpioperator.api.extensions import restarts
from mpioperator.api.extensions.parsed import Extensions, parse
from mpioperator.api.objects import Obj
from mpioperator.api.validation import validate_spec, validate_worker_bound
from mpioperator.cache.keys import split_key
from mpioperator.clock import Clock, RealClock
from mpioperator.controller import children, conditions, finished, report, status_writer, validity
from mpioperator.controller.bounded import BoundedSet
from mpioperator.controller.builders.configmap import max_worker_replicas
from mpioperator.controller.children_step import ChildrenStep
from mpioperator.controller.conditions import format_time
from mpioperator.controller.decorators.host_waiter import DEFAULT_IMAGE as DEFAULT_HOST_WAITER_IMAGE
from mpioperator.controller.decorators.host_waiter import HostWaiter
from mpioperator.controller.errors import StatusConflict
from mpioperator.controller.events import NORMAL
from mpioperator.controller.feature import FeatureFactory, FeaturePorts, FeatureSet, Seen
from mpioperator.controller.log_follower import FollowSettings
from mpioperator.controller.metrics import JobMetrics
from mpioperator.controller.pod_state import PodStateMemory
from mpioperator.controller.ports import Listers, PodLogs, Recorder, Writer
from mpioperator.controller.said_before import SaidBefore
from mpioperator.controller.status import StatusEvent, compute_status
from mpioperator.podgroup.backend import PodGroupBackend
from mpioperator.podgroup.null import NullBackend

log = structlog.get_logger(__name__)


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
    # --launcher-log-interval-seconds, --launcher-log-qps: how often launchers' logs are read.
    launcher_log: FollowSettings = field(default_factory=FollowSettings)


# Which jobs already had a one-shot event (uid, what), so retries do not repeat it.
_Once = BoundedSet[tuple[str, str]]


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
        features: FeatureFactory | None = None,
        logs: PodLogs | None = None,
        clock: Clock | None = None,
    ) -> None:
        """`features`: our extensions (controller/features/__init__.py's default_features); none if None.
        `logs`: where launchers' logs are read (none when None); `clock`: the features' monotonic time."""
        self._l = listers
        self._w = writer
        self._rec = recorder
        self._metrics = metrics
        self._utcnow = utcnow
        self._settings = settings or SyncSettings()
        self._once = _Once()
        self._recent = status_writer.RecentStatusWrites()
        self._said = SaidBefore()
        self._reporter = report.Reporter(self._settings.worker_startup_deadline_seconds)
        self._counts_settle = report.CountsSettle()
        self._pod_states = PodStateMemory()
        backend = backend or NullBackend()
        waiter = HostWaiter(self._settings.host_waiter_image, self._settings.worker_startup_deadline_seconds)
        self._features = FeatureSet()  # filled below: the features need the child reconciler as a port
        self._children = children.ChildReconciler(
            listers,
            writer,
            recorder,
            self._settings.cluster_domain,
            backend,
            waiter,
            launcher_decorator=self._features.decorate_launcher,
            before_delete=self._features.before_delete,
            hostfile_addresses=self._features.hostfile_addresses,
        )
        ports = FeaturePorts(
            listers,
            writer,
            recorder,
            self._children,
            lambda cached, status: self._write_status(cached, status, []),
            self._features.before_delete,
            backend,
            self._settings.exec_agent_image,
            logs,
            clock or RealClock(),
            self._settings.launcher_log,
            self._settings.cluster_domain,
        )
        self._features.use(features(ports) if features is not None else [])
        self._step = ChildrenStep(self._children, self._features)

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
        ext = parse(job)  # the job's annotations, read once for the whole sync
        if job["metadata"].get("deletionTimestamp"):
            await self._features.on_deleting(cached, job, ext)
            return SyncResult()
        guarded = await self._features.guard(cached, job, ext)
        if guarded is not cached:
            self._recent.remember(cached, guarded)
            cached = guarded
        problems = (
            validate_spec(job)
            + list(ext.errors)
            + validate_worker_bound(job, self._settings.max_worker_replicas)
            + restarts.validate_cap(ext.restarts, self._settings.max_restarts_cap)
            + self._features.validate(job, ext)
        )
        if not problems:
            validity.clear(job)
        else:
            if (warning := validity.mark(job, problems, self._utcnow())) is not None:
                for event in self._said.unsaid(job["metadata"].get("uid", ""), [warning]):
                    self._rec.record(job, event.type, event.reason, event.message)
                await self._write_status(cached, job["status"], [warning])
            await self._features.follow(job, ext, [])
            return SyncResult()
        return await self._sync_valid(cached, job, ext)

    async def _sync_valid(self, cached: Obj, job: Obj, ext: Extensions) -> SyncResult:
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

        finished.complete_upstream_eviction(status)
        if conditions.is_finished(status) and status.get("completionTime"):
            return await self._sync_finished(cached, job, ext)

        suspended = accessors.suspended(job)
        if not status.get("startTime") and not suspended:
            status["startTime"] = format_time(now)

        if (stop := await self._features.before_children(cached, job, ext, now, suspended)) is not None:
            if stop.new_attempt:
                self._reporter.forget(uid)
            return SyncResult(requeue_after=stop.requeue_after)

        # Each pod this sync reads described once, those unchanged since the job's last sync not again.
        pods = self._pod_states.begin(uid)
        step = await self._step.run(job, ext, suspended=suspended, now=now, states=pods)
        launcher = step.launcher
        if suspended:
            await self._clean_up(job, ext, status)
        await self._features.follow(job, ext, step.workers)  # also when held, refused or suspended

        launcher_pods = self._l.pods.owned_by(launcher["metadata"].get("uid", "")) if launcher else []
        observed_workers = self._step.observed_workers(job, step, suspended)
        observed = self._reporter.observe(job, ext, launcher_pods, observed_workers, now, pods)
        result = compute_status(
            job,
            launcher=launcher,
            launcher_pods=launcher_pods,
            workers=step.workers,
            now=now,
            failure_detail=self._features.failure_detail(job, ext, observed.failure_detail),
            deadline_missed=observed.deadline.message if observed.deadline.expired else "",
            tally=self._reporter.tally(job, launcher_pods, step.workers, now),
        )
        events = [
            *result.events,
            *report.rejection(result.status, step.rejection, cleared=not step.held, now=now),
        ]
        self._features.amend_status(result.status, now)
        events += self._reporter.finish(result.status, observed, suspended=suspended, now=now)
        for event in self._said.unsaid(uid, events):
            self._rec.record(job, event.type, event.reason, event.message)
        self._features.describe(job, ext, result.status, Seen(launcher, launcher_pods, observed_workers, now))
        held_back = self._counts_settle.wait(uid, cached.get("status") or {}, result.status, now.timestamp())
        if held_back is None:
            await self._write_status(cached, result.status, events)
        # After the write: a Conflict ends the sync, and the counts are the next sync's (L42).
        self._metrics.observe(job, cached.get("status") or {}, result.status, launcher, self._utcnow)
        if not self.has_job(ns, name):
            # Deleted while this sync awaited its writes: the delete handler has already forgotten the
            # job's series, and those just observed would otherwise stay for good.
            empty = not self._l.mpijobs.select(ns, {})
            self._metrics.forget_deleted(ns, name, namespace_empty=empty)
        else:
            self._pod_states.keep(uid, pods)  # not for a deleted job: its delete handler forgot it
        revisit = self._features.recheck_after(job, ext, now)
        waits = [
            w
            for w in (step.held_for, observed.recheck_after, held_back, step.recheck_after, revisit)
            if w is not None
        ]
        return SyncResult(requeue_after=min(waits) if waits else None)

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

    async def _sync_finished(self, cached: Obj, job: Obj, ext: Extensions) -> SyncResult:
        """A finished job is only cleaned up: nothing is created, and once clean nothing is written."""
        status = job["status"]
        policy = accessors.clean_pod_policy(job)
        if policy in (api.CLEAN_POD_POLICY_ALL, api.CLEAN_POD_POLICY_RUNNING):
            await self._clean_up(job, ext, status)
        if policy == api.CLEAN_POD_POLICY_ALL or finished.launcher_gave_up(self._l, job):
            await self._children.stop_launcher(job)
        await self._features.follow(job, ext, [])
        # A finished job never reads its workers again: kept, its worker view and the report's walks would
        # hold its last pods until other jobs pushed them out.
        self.forget(job["metadata"].get("uid", ""))
        await self._write_status(cached, status, [])
        return SyncResult(requeue_after=await finished.expire(self._w, job, self._utcnow()))

    def forget(self, uid: str) -> None:
        """The job finished or was deleted: what the sync kept of it goes."""
        self._children.forget(uid)
        self._reporter.forget(uid)
        self._pod_states.forget(uid)
        self._features.forget(uid)

    async def _clean_up(self, job: Obj, ext: Extensions, status: Obj) -> None:
        """upstream's cleanUpWorkerPods: worker pods per cleanPodPolicy, then the gang's PodGroup."""
        await self._children.clean_up_workers(job, ext, status)
        await self._features.after_clean_up(job, ext)
