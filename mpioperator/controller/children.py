"""Get-or-create-or-update of each child object, reading caches and writing only differences."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

import structlog

from mpioperator.api import accessors, names
from mpioperator.api import constants as api
from mpioperator.api.extensions.parsed import Extensions
from mpioperator.api.objects import Obj, json_copy
from mpioperator.api.ownership import is_controlled_by
from mpioperator.controller.bounded import BoundedSet
from mpioperator.controller.builders import configmap, launcher_job, secret, service
from mpioperator.controller.builders.podspec import UPSTREAM_KEYS, Decorator, SSHKeys
from mpioperator.controller.child_state import launcher_done
from mpioperator.controller.child_writes import ChildWrites
from mpioperator.controller.decorators import compose
from mpioperator.controller.decorators.host_waiter import HostWaiter
from mpioperator.controller.errors import SyncError
from mpioperator.controller.events import WARNING
from mpioperator.controller.hostfile_memo import VerifiedConfigMaps
from mpioperator.controller.pod_cache import slim_pod
from mpioperator.controller.ports import Listers, Recorder, Writer
from mpioperator.controller.rejections import ChildRejected, is_permanent
from mpioperator.controller.user_ssh_secret import key_names
from mpioperator.controller.worker_view import WorkerViews, hostfile_key, worker_selector
from mpioperator.kube import errors
from mpioperator.kube.resources import CONFIG_MAPS, JOBS, PODS, SECRETS, SERVICES
from mpioperator.podgroup.backend import PodGroupBackend, decorator_for
from mpioperator.podgroup.null import NullBackend

log = structlog.get_logger(__name__)

# Worker pods are created concurrently, but not so many at once that one big job starves the others.
_CREATE_CONCURRENCY = 16


def _listed(decorate: Decorator | None) -> list[Decorator]:
    return [] if decorate is None else [decorate]


def _named_workers(job: Obj, pods: list[Obj]) -> list[tuple[Obj, int]]:
    """The pods with a worker's name, with its index."""
    found = []
    for pod in pods:
        index = names.worker_index(job, pod["metadata"]["name"])
        if index is not None:
            found.append((pod, index))
    return found


def _version(obj: Obj | None) -> tuple[object, object] | None:
    if obj is None:
        return None
    return (obj["metadata"].get("uid"), obj["metadata"].get("resourceVersion"))


RESTART_POLICY_OVERRIDDEN = "Restart policy in pod template overridden by restart policy in replica spec"


# UIDs of pods this process deleted: a UID is never reused, so a pod once deleted never needs another DELETE.
RecentlyDeleted = BoundedSet[str]


class ChildReconciler:
    def __init__(
        self,
        listers: Listers,
        writer: Writer,
        recorder: Recorder,
        cluster_domain: str,
        backend: PodGroupBackend | None = None,
        host_waiter: HostWaiter | None = None,
        launcher_decorator: Callable[[Obj, Extensions, Decorator | None], Decorator | None] | None = None,
        before_delete: Callable[[Obj, Extensions, list[Obj]], Awaitable[None]] | None = None,
        hostfile_addresses: Callable[[Obj, Extensions, list[Obj]], configmap.Addresses | None] | None = None,
    ) -> None:
        self._l = listers
        self._writes = ChildWrites(writer, recorder)
        self._host_waiter = host_waiter or HostWaiter()
        self._w = writer
        self._rec = recorder
        self._domain = cluster_domain
        # Gang scheduling decorates worker pods and the launcher template; off by default.
        self._backend: PodGroupBackend = backend or NullBackend()
        self._deleted = RecentlyDeleted()
        self._hostfiles = VerifiedConfigMaps()
        self._views = WorkerViews()
        # The features' additions to the launcher's pod template (the exec agent's, when allowed).
        self._launcher_decorator = launcher_decorator or (lambda job, ext, decorate: decorate)
        # Told which of a job's pods are about to be deleted (the exec agent's Role lets them go first).
        self._before_delete = before_delete
        # The hostfile's addresses when a feature gives other than upstream's DNS names (pod IPs).
        self._hostfile_addresses = hostfile_addresses or (lambda job, ext, workers: None)

    def launcher(self, job: Obj) -> Obj | None:
        found: Obj | None = self._l.jobs.get(job["metadata"]["namespace"], names.launcher_name(job))
        if found is not None and not is_controlled_by(found, job):
            raise self._writes.refuse(job, found)
        return found

    async def service(self, job: Obj) -> Obj:
        desired = service.new_service(job)
        cached = self._l.services.get(job["metadata"]["namespace"], desired["metadata"]["name"])
        return await self._writes.upsert(
            job,
            SERVICES,
            cached,
            desired,
            ["spec.selector", "spec.publishNotReadyAddresses"],
            "getting or creating Service to front workers",
        )

    async def config_map(self, job: Obj, ext: Extensions) -> Obj:
        """The hostfile ConfigMap. Its hostfile has a line per worker, so it is built only when the
        ConfigMap is created or must be compared: not when the cached version is one this process
        already found right for the same inputs (an unchanged job, running, suspended or held)."""
        ns = job["metadata"]["namespace"]
        cached = self._l.config_maps.get(ns, names.config_map_name(job))
        # Ours (decisions-local L36): only pods the job made are its hosts; upstream lists any Running pod
        # with the worker labels.
        view = self._views.read(job, self._l.pods)
        workers, running = view.controlled, view.running
        # The inputs depend on the pods (the view's) and on the job and cached ConfigMap: kept on the view
        # for the same job fields and ConfigMap version, so an unchanged job's are not made again.
        depends = (hostfile_key(job), _version(cached))
        inputs = view.derived.get(depends)
        if inputs is None:
            addresses = self._hostfile_addresses(job, ext, workers)
            inputs = self._hostfiles.inputs(job, running, cached, addresses)
            if inputs is not None:
                view.derived.clear()
                view.derived[depends] = inputs
        if cached is not None and self._hostfiles.verified(job, inputs):
            return cached
        desired = configmap.new_config_map(
            job, running, self._domain, self._hostfile_addresses(job, ext, workers)
        )
        made = await self._writes.upsert(
            job, CONFIG_MAPS, cached, desired, ["data"], "getting or creating ConfigMap"
        )
        if made is cached:
            self._hostfiles.remember(job, inputs)
        return made

    async def ssh_secret(self, job: Obj) -> Obj:
        """The job's generated SSH Secret. An existing one of ours keeps its keys unless some are missing
        (upstream compares key names, never values): workers already running hold the public key
        as their authorized_keys, so new keys would lock the launcher out."""
        ns = job["metadata"]["namespace"]
        name = names.secret_name(job)
        what = "creating SSH auth secret"
        found = self._l.secrets.get(ns, name)
        if found is None:
            # When the server has it already, the Secret there is what the pods use.
            found, created = await self._writes.create_or_read(SECRETS, secret.new_ssh_secret(job), ns, what)
            if created:
                return found
        if not is_controlled_by(found, job):
            raise self._writes.refuse(job, found)
        if secret.has_expected_keys(found):
            return found  # no key generation for a Secret that is already right
        # The cache keeps key names, not values (controller/secret_cache.py): the update replaces the
        # whole object, so it starts from the Secret as the server has it.
        found = await self._writes.read(SECRETS, name, ns, what)
        # Not re-applied on a Conflict: whoever wrote the Secret meanwhile may have completed it, and
        # fresh keys written over it would lock the launcher out of workers already holding the old ones.
        # The retried sync reads it again and keeps it when complete.
        return await self._writes.upsert(
            job, SECRETS, found, secret.new_ssh_secret(job), ["data"], what, reapply_on_conflict=False
        )

    def none_shared_cached(self, job: Obj) -> bool:
        """Whether the cache has none of the job's Service, ConfigMap and generated SSH Secret."""
        ns = job["metadata"]["namespace"]
        return (
            self._l.services.get(ns, names.service_name(job)) is None
            and self._l.config_maps.get(ns, names.config_map_name(job)) is None
            and self._l.secrets.get(ns, names.secret_name(job)) is None
        )

    def present_workers(self, job: Obj) -> list[Obj]:
        """The cached worker pods of the indexes the spec asks for, in index order: the very same list
        while the job's pods are unchanged, so what was said of them can be kept."""
        if not accessors.replica_spec(job, api.WORKER):
            return []
        return self._views.read(job, self._l.pods).present

    async def workers(self, job: Obj, ext: Extensions) -> list[Obj]:
        if not accessors.replica_spec(job, api.WORKER):
            return []
        ns = job["metadata"]["namespace"]
        view = self._views.read(job, self._l.pods)
        replicas = accessors.worker_replicas(job)
        if view.complete and len(view.listed) == replicas:
            # Every worker there and the job's, none surplus: nothing to make, scale down or refuse.
            return view.present
        await self._scale_down(job, ext, view.listed, replicas)
        existing = list(view.by_index)
        for i in (i for i, pod in enumerate(existing) if pod is None):
            # A pod of that name without the job's labels is not ours: refused below, not created over.
            existing[i] = self._l.pods.get(ns, names.worker_name(job, i))
        missing = [i for i, pod in enumerate(existing) if pod is None]
        # One first, then the rest together: a template the API server refuses costs one refused request,
        # not one per worker (L11).
        for batch in (missing[:1], missing[1:]):
            for i, made in zip(batch, await self._create_workers(job, ext, batch), strict=True):
                existing[i] = made
        workers = [p for p in existing if p is not None]
        for pod in workers:
            if not is_controlled_by(pod, job):
                raise self._writes.refuse(job, pod)
        return workers

    async def _create_workers(self, job: Obj, ext: Extensions, indices: list[int]) -> list[Obj]:
        if not indices:
            return []
        ns = job["metadata"]["namespace"]
        gate = asyncio.Semaphore(_CREATE_CONCURRENCY)
        gang = _listed(decorator_for(self._backend, job))
        keys = self._ssh_keys(job, ext)

        async def create(i: int) -> Obj:
            # The API server answers with the whole pod; the rest of the sync, and what it keeps of the job's
            # workers until their next change, reads only what the pod cache keeps of a pod (whole, the
            # answers of a burst of 1,600 workers were 21 MiB of the operator's peak).
            async with gate:
                desired = compose.new_worker(job, i, gang, keys, ext=ext)
                try:
                    return slim_pod(await self._w.create(PODS, desired, ns))
                except errors.AlreadyExists:
                    return slim_pod(await self._w.get(PODS, desired["metadata"]["name"], ns))

        created = await asyncio.gather(*(create(i) for i in indices), return_exceptions=True)
        for i, made in zip(indices, created, strict=True):
            if isinstance(made, errors.ApiError):
                # Upstream creates one worker after another and stops at the first failure: the event
                # names the lowest failing index only, however many of them failed together here.
                if is_permanent(made):
                    raise ChildRejected(PODS.kind, names.worker_name(job, i), "created", made) from made
                message = made.server_message
                self._rec.record(job, WARNING, api.REASON_FAILED, f"worker pod created failed: {message}")
                raise SyncError(message) from made
            if isinstance(made, BaseException):
                raise made
        return [made for made in created if not isinstance(made, BaseException)]

    async def _scale_down(self, job: Obj, ext: Extensions, listed: list[Obj], replicas: int) -> None:
        """Deletes the job's worker pods (`listed`) whose index is the replicas or more."""
        if len(listed) <= replicas:
            return
        doomed: list[Obj] = []
        for pod in listed:
            label = pod["metadata"].get("labels", {}).get(api.LABEL_REPLICA_INDEX)
            if label is None:
                # Deliberately unlike upstream, which silently abandons the worker step here: we skip
                # just this pod.
                log.warning("worker pod without index label ignored", pod=pod["metadata"]["name"])
                continue
            try:
                index = int(label)
            except ValueError:
                continue
            if index >= replicas:
                doomed.append(pod)
        await self.withdraw(job, ext, doomed)
        for pod in doomed:
            await self._delete_pod(pod)

    def _ssh_keys(self, job: Obj, ext: Extensions) -> SSHKeys:
        """The keys pods mount from the job's SSH Secret: a user's own may name them as the openmpi
        prototype did (the sync checked it before any pod is made)."""
        name = ext.conveniences.ssh_secret
        if name is None:
            return UPSTREAM_KEYS
        return key_names(self._l.secrets.get(job["metadata"]["namespace"], name))

    def _say_overridden(self, job: Obj, overridden: bool) -> None:
        """Upstream's Warning when the launcher template's own restartPolicy gave way to the replica's."""
        if overridden:
            self._rec.record(
                job, WARNING, api.REASON_SET_POD_TEMPLATE_RESTART_POLICY, RESTART_POLICY_OVERRIDDEN
            )

    async def create_launcher(self, job: Obj, ext: Extensions) -> Obj:
        decorate = self._launcher_decorator(job, ext, decorator_for(self._backend, job))
        desired, overridden = compose.new_launcher_job(
            job, _listed(decorate), self._ssh_keys(job, ext), self._host_waiter, ext=ext
        )
        self._say_overridden(job, overridden)
        ns = job["metadata"]["namespace"]
        try:
            created: Obj = await self._w.create(JOBS, desired, ns)
            return created
        except errors.AlreadyExists:
            found = await self._writes.read(JOBS, desired["metadata"]["name"], ns, "getting launcher Job")
            if not is_controlled_by(found, job):
                raise self._writes.refuse(job, found) from None
            return found
        except errors.ApiError as exc:
            if is_permanent(exc):
                raise ChildRejected(JOBS.kind, desired["metadata"]["name"], "created", exc) from exc
            self._rec.record(
                job, WARNING, api.REASON_FAILED, f"launcher pod created failed: {exc.server_message}"
            )
            raise SyncError(f"creating launcher Pod: {exc.server_message}") from exc

    async def sync_launcher_suspension(
        self, job: Obj, ext: Extensions, launcher: Obj, suspended: bool, *, may_resume: bool = True
    ) -> Obj:
        """Suspend the launcher Job with the job; resume it with the job once `may_resume` (under
        WaitForWorkersReady, once the workers are Ready again, as upstream's own fix does)."""
        ns = job["metadata"]["namespace"]
        launcher_suspended = bool(launcher.get("spec", {}).get("suspend"))
        try:
            if not suspended and launcher_suspended and may_resume:
                resumed = json_copy(launcher)
                if resumed.get("status", {}).get("startTime"):
                    del resumed["status"]["startTime"]
                    resumed = await self._w.update_status(JOBS, resumed, ns)
                # Decorated, so a resume also carries the group label/annotation (upstream merges them too).
                template, overridden = compose.launcher_pod_template(
                    job, _listed(decorator_for(self._backend, job)), ext=ext
                )
                self._say_overridden(job, overridden)
                launcher_job.merge_scheduling_directives(resumed["spec"]["template"], template)
                resumed["spec"]["suspend"] = False
                updated: Obj = await self._w.update(JOBS, resumed, ns)
                return updated
            if suspended and not launcher_suspended:
                paused = json_copy(launcher)
                paused["spec"]["suspend"] = True
                updated = await self._w.update(JOBS, paused, ns)
                return updated
        except errors.ApiError as exc:
            if is_permanent(exc):
                raise ChildRejected(JOBS.kind, launcher["metadata"]["name"], "updated", exc) from exc
            raise SyncError(exc.server_message) from exc
        return launcher

    def forget(self, uid: str) -> None:
        """The job finished or was deleted: what was kept of its workers goes."""
        self._views.forget(uid)

    def holds_workers_of(self, uid: str) -> bool:
        return self._views.holds(uid)

    async def clean_up_workers(self, job: Obj, ext: Extensions, status: Obj) -> None:
        """Delete worker pods per cleanPodPolicy and zero the Worker counts."""
        keep_finished = accessors.clean_pod_policy(job) == api.CLEAN_POD_POLICY_RUNNING
        doomed: list[Obj] = []
        replicas = accessors.worker_replicas(job)
        listed = self._l.pods.select(job["metadata"]["namespace"], worker_selector(job))
        for pod, index in _named_workers(job, listed):
            if index >= replicas or pod["metadata"].get("deletionTimestamp"):
                continue
            if not is_controlled_by(pod, job):
                raise self._writes.refuse(job, pod)
            if keep_finished and pod.get("status", {}).get("phase") not in ("Running", "Pending"):
                continue
            doomed.append(pod)
        await self.withdraw(job, ext, doomed)
        for pod in doomed:
            await self._delete_pod(pod)
        replica_statuses = status.setdefault("replicaStatuses", {})
        replica_statuses[api.WORKER] = {}

    async def stop_launcher(self, job: Obj) -> None:
        """Under cleanPodPolicy All a finished job's launcher stops too, through its Job, once
        (decisions-local L7).

        An unfinished launcher Job (the job ended by eviction) is suspended: the Job controller deletes
        its pods and makes no new one. Deleting the pod instead left the Job active, so the Job
        controller replaced it and every sync deleted the replacement. A finished Job makes no new pod,
        so a pod it left running is deleted (once; `_delete_pod` remembers it).
        """
        launcher = self._l.jobs.get(job["metadata"]["namespace"], names.launcher_name(job))
        if launcher is None or not is_controlled_by(launcher, job):
            return
        if not launcher_done(launcher):
            if not launcher.get("spec", {}).get("suspend"):
                stopped = json_copy(launcher)
                stopped["spec"]["suspend"] = True
                try:
                    await self._w.update(JOBS, stopped, job["metadata"]["namespace"])
                except errors.ApiError as exc:
                    raise SyncError(f"suspending the launcher Job: {exc.message}") from exc
            return
        for pod in self._l.pods.owned_by(launcher["metadata"].get("uid", "")):
            if pod.get("status", {}).get("phase") in ("Running", "Pending"):
                await self._delete_pod(pod)

    async def withdraw(self, job: Obj, ext: Extensions, pods: list[Obj]) -> None:
        """Say that these pods of the job are about to be deleted (before any DELETE of them)."""
        if pods and self._before_delete is not None:
            await self._before_delete(job, ext, pods)

    async def delete_pod(self, pod: Obj) -> None:
        """Delete one of the job's pods (once; see `_delete_pod`)."""
        await self._delete_pod(pod)

    async def _delete_pod(self, pod: Obj) -> None:
        """Delete `pod` unless it is already going: terminating in the cache, or deleted by us moments ago
        and not yet seen terminating (the cache lags our own writes; a second DELETE would be wasted)."""
        meta = pod["metadata"]
        if meta.get("deletionTimestamp") or self._deleted.seen(meta.get("uid", "")):
            return
        try:
            await self._w.delete(PODS, meta["name"], meta.get("namespace", ""))
        except errors.NotFound:
            pass
        except errors.ApiError as exc:
            raise SyncError(exc.server_message) from exc
        self._deleted.add(meta.get("uid", ""))
