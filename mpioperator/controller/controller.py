"""The MPIJob controller: informers feed one rate-limited queue; workers run the sync handler.

Shape of sample-controller: event handlers only compute keys and enqueue (plain `add`, D4);
failures go back through the rate limiter; a successful sync forgets the key's backoff.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

import structlog

from mpioperator.api.extensions.restarts import DEFAULT_MAX_RESTARTS_CAP
from mpioperator.cache.factory import SharedInformerFactory
from mpioperator.cache.informer import SharedInformer
from mpioperator.cache.keys import DeletedFinalStateUnknown, deleted_object, object_key, split_key
from mpioperator.clock import Clock
from mpioperator.controller.builders.configmap import max_worker_replicas
from mpioperator.controller.decorators.host_waiter import DEFAULT_IMAGE as DEFAULT_HOST_WAITER_IMAGE
from mpioperator.controller.enqueue import launcher_pod_ended, owning_mpijob_key, spec_changed
from mpioperator.controller.errors import ControllerStopped, StatusConflict, SyncError
from mpioperator.controller.events import EventRecorder
from mpioperator.controller.features import default_features
from mpioperator.controller.fence import FencedWriter
from mpioperator.controller.listers import POD_INDEXERS, StoreLister
from mpioperator.controller.log_follower import FollowSettings
from mpioperator.controller.metrics import JobMetrics
from mpioperator.controller.pod_cache import POD_CACHE_PROJECTION
from mpioperator.controller.ports import Listers, Writer
from mpioperator.controller.secret_cache import (
    SECRET_CACHE_PROJECTION,
    SECRET_FIRST_PAGE,
    SECRET_PAGE_BYTES,
)
from mpioperator.controller.sync import JobSyncer, SyncSettings
from mpioperator.controller.unexpected import FirstSeen
from mpioperator.controller.watched import CHILD_RESOURCES, watched
from mpioperator.kube import errors
from mpioperator.kube.client import KubeClient
from mpioperator.kube.resources import (
    CONFIG_MAPS,
    JOBS,
    MPIJOBS,
    PODS,
    PRIORITY_CLASSES,
    SECRETS,
    SERVICES,
    Resource,
)
from mpioperator.podgroup.backend import PodGroupBackend
from mpioperator.podgroup.factory import new_backend
from mpioperator.podgroup.resources import effective_pod_requests
from mpioperator.workqueue.metrics import PrometheusMetricsProvider
from mpioperator.workqueue.rate_limiters import default_controller_rate_limiter
from mpioperator.workqueue.rate_limiting import RateLimitingQueue

log = structlog.get_logger(__name__)

QUEUE_NAME = "MPIJob"


@dataclass(frozen=True, slots=True)
class ControllerSettings:
    namespaces: tuple[str, ...] = ()
    cluster_domain: str = ""
    queue_qps: float = 10.0
    queue_burst: int = 100
    cache_sync_timeout: float = 120.0
    gang_scheduling: str = ""
    # Seconds for a job's workers to be all Ready before it fails; 0 leaves it to each job's annotation
    # `mpioperator.io/worker-startup-deadline-seconds` (off unless set: upstream's behaviour).
    worker_startup_deadline_seconds: int = 0
    # --exec-agent: the image that hands exec-agent launchers their kubectl; None: jobs may not ask for it.
    exec_agent_image: str | None = None
    # The image of the launcher's wait-for-hosts init container (mpioperator.io/wait-for-ssh-port).
    host_waiter_image: str = DEFAULT_HOST_WAITER_IMAGE
    # --max-worker-replicas: a job with more workers is Invalid (docs/extensions.md). This default is the
    # flag's without a cluster domain; the operator passes the flag's value.
    max_worker_replicas: int = max_worker_replicas()
    # --max-restarts-cap: the most mpioperator.io/max-restarts a job may ask for.
    max_restarts_cap: int = DEFAULT_MAX_RESTARTS_CAP
    # --launcher-log-interval-seconds and --launcher-log-qps (log_follower.py).
    launcher_log: FollowSettings = field(default_factory=FollowSettings)
    # Child events and the echoes of our own status writes wait this long, so the events of one job's
    # pods starting one after another become one sync and one status write instead of one each
    # (decisions-local L6). Spec changes do not wait.
    child_settle: float = 0.3
    # A launcher pod's end waits for its Job's own status, which the Job controller writes within its
    # one-second batch period: one status write for both instead of two.
    launcher_end_settle: float = 1.5


def gang_backend(gang_scheduling: str) -> PodGroupBackend:
    """The --gang-scheduling backend; minResources counts what kube-scheduler reserves per pod (init
    containers, native sidecars, overhead), not upstream's regular containers only (decisions-local)."""
    return new_backend(gang_scheduling, effective_pod_requests)


def _resource_version(obj: dict[str, Any]) -> object:
    return obj.get("metadata", {}).get("resourceVersion")


class MPIJobController:
    def __init__(
        self,
        client: KubeClient,
        metrics: JobMetrics,
        *,
        settings: ControllerSettings,
        clock: Clock,
        writer: Writer | None = None,
    ) -> None:
        self._settings = settings
        self._clock = clock
        self._metrics = metrics
        self._client = client
        # Everything the controller writes goes through this, and nothing once it has stopped.
        self._fence = FencedWriter(writer or client)
        self._writer = self._fence.writer
        self.factory = SharedInformerFactory(client, clock=clock)
        self.backend = gang_backend(settings.gang_scheduling)
        self._informers: dict[Resource, list[SharedInformer]] = {
            res: [self._informer(res, ns) for ns in scopes]
            for res, scopes in watched(settings.namespaces, self.backend.resource)
        }
        pod_groups = priority_classes = None
        if self.backend.resource is not None:
            # Only with gang scheduling: without it neither kind is read, and the CRD may not exist.
            pod_groups = StoreLister(self._informers[self.backend.resource])
            # Read for minResources only. Upstream's handler for it is a no-op (classes have no owner),
            # so none is registered.
            priority_classes = StoreLister(self._informers[PRIORITY_CLASSES])
        self.queue: RateLimitingQueue[str] = RateLimitingQueue(
            default_controller_rate_limiter(qps=settings.queue_qps, burst=settings.queue_burst, clock=clock),
            clock=clock,
            name=QUEUE_NAME,
            metrics=PrometheusMetricsProvider(metrics.registry).for_queue(QUEUE_NAME),
        )
        self.recorder = EventRecorder(
            self._writer,
            component="mpi-job-controller",
            kind="MPIJob",
            api_version="kubeflow.org/v2beta1",
            utcnow=clock.utcnow,
        )
        listers = Listers(
            mpijobs=StoreLister(self._informers[MPIJOBS]),
            pods=StoreLister(self._informers[PODS]),
            jobs=StoreLister(self._informers[JOBS]),
            config_maps=StoreLister(self._informers[CONFIG_MAPS]),
            secrets=StoreLister(self._informers[SECRETS]),
            services=StoreLister(self._informers[SERVICES]),
            pod_groups=pod_groups,
            priority_classes=priority_classes,
        )
        self._jobs = listers.jobs
        self._mpijobs = listers.mpijobs
        self.syncer = JobSyncer(
            listers,
            self._writer,
            self.recorder,
            metrics,
            utcnow=clock.utcnow,
            settings=SyncSettings(
                cluster_domain=settings.cluster_domain,
                worker_startup_deadline_seconds=settings.worker_startup_deadline_seconds,
                exec_agent_image=settings.exec_agent_image,
                host_waiter_image=settings.host_waiter_image,
                max_worker_replicas=settings.max_worker_replicas,
                max_restarts_cap=settings.max_restarts_cap,
                launcher_log=settings.launcher_log,
            ),
            backend=self.backend,
            features=default_features,
            logs=client,  # a read: the fence is for writes
            clock=clock,
        )
        for informer in self._informers[MPIJOBS]:
            informer.add_event_handler(
                on_add=self._on_job_add, on_update=self._on_job_update, on_delete=self._on_job_delete
            )
        for res in (*CHILD_RESOURCES, *((self.backend.resource,) if self.backend.resource else ())):
            for informer in self._informers[res]:
                informer.add_event_handler(
                    on_add=self._on_child, on_update=self._on_child_update, on_delete=self._on_child
                )
        self._synced = False
        self._stopping = False
        self._unexpected = FirstSeen()

    def _informer(self, res: Resource, namespace: str | None) -> SharedInformer:
        options = self.factory.options
        if res is PODS:
            options = replace(options, projection=POD_CACHE_PROJECTION)
            return self.factory.informer(res, namespace, indexers=POD_INDEXERS, options=options)
        if res is SECRETS:
            # Names and key names only, in small pages: Secrets may be large, and most are not ours.
            options = replace(
                options,
                projection=SECRET_CACHE_PROJECTION,
                limit=SECRET_FIRST_PAGE,
                page_bytes=SECRET_PAGE_BYTES,
            )
            return self.factory.informer(res, namespace, options=options)
        return self.factory.informer(res, namespace)

    def queue_idle(self) -> bool:
        """Nothing queued, delayed or in process: every known change has been reconciled."""
        return len(self.queue) == 0 and self.queue.processing == 0 and self.queue.waiting == 0

    def ready_check(self) -> str | None:
        return None if self._synced else "informer caches have not synced yet"

    def cached_mpijobs(self) -> list[dict[str, Any]] | None:
        """Every MPIJob in the cache, or None until the caches have synced (a standby's never do)."""
        if not self._synced:
            return None
        return [job for informer in self._informers[MPIJOBS] for job in informer.list()]

    # Event handlers: compute a key and enqueue. A job's creation and spec changes are a plain add;
    # everything else settles first (L6).
    def _on_job_add(self, obj: dict[str, Any]) -> None:
        # Upstream also defaults the cached object here; each sync defaults its own copy instead, so
        # the cache keeps exactly what the API server said.
        self.queue.add(object_key(obj))

    def _on_job_update(self, old: dict[str, Any], new: dict[str, Any]) -> None:
        if spec_changed(old, new):
            self.queue.add(object_key(new))
        else:
            # Mostly the echo of our own status write, which tells the last sync nothing new: it joins
            # the children's events instead of costing a sync while the pods are still starting.
            self.queue.add_after(object_key(new), self._settings.child_settle, retry=False)

    def _on_job_delete(self, obj: dict[str, Any] | DeletedFinalStateUnknown) -> None:
        meta = deleted_object(obj).get("metadata", {})
        namespace = meta.get("namespace", "")
        # The store has dropped the job before its handlers run, so an empty namespace reads empty.
        empty = not self._mpijobs.select(namespace, {})
        self._metrics.forget_deleted(namespace, meta.get("name", ""), namespace_empty=empty)
        self.syncer.forget(meta.get("uid", ""))

    def _on_child(self, obj: dict[str, Any] | DeletedFinalStateUnknown) -> None:
        child = deleted_object(obj)
        key = owning_mpijob_key(child, self._jobs.get)
        if key is None or not self._mpijob_cached(key):
            return
        ended = launcher_pod_ended(child)
        settle = self._settings.launcher_end_settle if ended else self._settings.child_settle
        self.queue.add_after(key, settle, retry=False)

    def _on_child_update(self, old: dict[str, Any], new: dict[str, Any]) -> None:
        if _resource_version(old) != _resource_version(new):
            self._on_child(new)

    def _mpijob_cached(self, key: str) -> bool:
        return self.syncer.has_job(*split_key(key))

    async def run(
        self,
        workers: int,
        stop: asyncio.Event,
        *,
        drain_timeout: float = 10.0,
        on_synced: Callable[[], object] = lambda: None,
    ) -> None:
        """Run the informers, the event sender and `workers` workers until `stop` is set, then let the
        syncs in flight finish (at most `drain_timeout` seconds); keys still queued are left.

        All of them are tasks of one task group. Cancelling `run` (what losing the Lease does) cancels
        every one at once: workers mid-sync, event handlers, watches, and the Events still queued, which
        are dropped. `run` ends only when all of them have ended and every API call they had sent has
        been answered, and from then on the controller's writer refuses to write: once a deposed
        leader's `run` is over, it writes nothing more. `on_synced` is called once the caches have
        synced, before any worker starts.
        """
        try:
            async with asyncio.TaskGroup() as group:
                group.create_task(self.recorder.run(), name="mpijob-events")
                self.factory.start()
                informers = group.create_task(self.factory.run_until_cancelled(), name="mpijob-informers")
                if not await self.factory.wait_for_cache_sync(timeout=self._settings.cache_sync_timeout):
                    raise RuntimeError("failed to wait for caches to sync")
                self._synced = True
                on_synced()
                log.info("caches synced; starting workers", workers=workers)
                tasks = [
                    group.create_task(self._worker(i), name=f"mpijob-worker-{i}") for i in range(workers)
                ]
                await stop.wait()
                # A stop finishes the syncs in flight and leaves the queued keys: whoever leads next lists
                # every job and syncs it anyway, and working through thousands of queued keys would keep
                # the Lease past the pod's grace period (a SIGKILL, then a takeover one lease later).
                self._stopping = True
                log.info("finishing the syncs in flight", timeout=drain_timeout)
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self.queue.shut_down_with_drain(), drain_timeout)
                for task in tasks:
                    task.cancel()
                informers.cancel()
                self.recorder.close()  # sends what the drained syncs recorded, then ends
        except BaseExceptionGroup as failed:
            # One failure (a cache that never synced) is the usual case: raise it as itself.
            if len(failed.exceptions) == 1:
                raise failed.exceptions[0] from None
            raise
        finally:
            self._synced = False
            self._fence.close()
            await self.queue.close()
            if not await self._client.settled(timeout=self._client.request_timeout):
                log.warning("API calls still unanswered after the controller stopped")

    async def _worker(self, index: int) -> None:
        while True:
            key, shutdown = await self.queue.get()
            if shutdown or key is None:
                return
            try:
                if self._stopping:
                    return
                await self._process(key)
            finally:
                self.queue.done(key)

    async def _process(self, key: str) -> None:
        started = time.monotonic()
        bound = log.bind(job=key)
        try:
            with structlog.contextvars.bound_contextvars(job=key):
                result = await self.syncer.sync(key)
        except asyncio.CancelledError:
            raise
        except StatusConflict as exc:
            # Not a failure: someone else wrote the job after it was read, and the next sync computes from
            # what they wrote. Through the rate limiter all the same, so a job rewritten without pause is
            # synced with a growing back-off, never in a loop.
            self.queue.add_rate_limited(key)
            self._metrics.reconcile_duration.labels(result="conflict").observe(time.monotonic() - started)
            bound.info("status changed since read; syncing again", error=str(exc))
            return
        except Exception as exc:
            self._metrics.reconcile_errors.inc()
            self._metrics.reconcile_duration.labels(result="error").observe(time.monotonic() - started)
            self.queue.add_rate_limited(key)
            self._report(bound, exc, self.queue.num_requeues(key))
            return
        self.queue.forget(key)
        if result.requeue_after is not None:
            self.queue.add_after(key, result.requeue_after)
        self._metrics.reconcile_duration.labels(result="success").observe(time.monotonic() - started)
        bound.debug("synced", seconds=round(time.monotonic() - started, 4))

    def _report(self, bound: Any, exc: Exception, requeues: int) -> None:
        """A failed sync, retried with backoff. What the API server refused is said in one line, as
        upstream logs it; anything else is a bug, logged with its traceback the first time it is seen."""
        if isinstance(exc, (SyncError, errors.ApiError, ControllerStopped)):
            cause = exc.__cause__ if isinstance(exc.__cause__, errors.ApiError) else exc
            status = cause.status if isinstance(cause, errors.ApiError) else None
            bound.warning("error syncing", error=str(exc), status=status, requeues=requeues)
        elif self._unexpected.first(exc):
            bound.error("unexpected error syncing; retrying", exc_info=exc, requeues=requeues)
        else:
            bound.warning(
                "unexpected error syncing again (traceback logged once)",
                error=f"{type(exc).__name__}: {exc}",
                requeues=requeues,
            )
