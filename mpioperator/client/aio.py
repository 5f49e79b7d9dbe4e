"""The asynchronous MPIJob client: create, get, list, watch, wait, logs, suspend, resume, delete.

Built on the operator's own API client (`mpioperator.kube`), so objects are plain dicts and every API
error arrives as an `MPIJobError` that names the job and the problem.
"""

from __future__ import annotations

import asyncio
import builtins
import contextlib
import os
from collections.abc import AsyncGenerator, Callable, Mapping
from datetime import UTC, datetime
from typing import Any, Self

from mpioperator import __version__
from mpioperator.api import constants as api
from mpioperator.client import status
from mpioperator.client.errors import (
    ConfigurationError,
    InvalidMPIJob,
    LauncherNotFound,
    MPIJobError,
    MPIJobFailed,
    MPIJobNotFound,
    WaitTimeout,
    translate,
)
from mpioperator.kube.client import KubeClient
from mpioperator.kube.config import context_namespace, kubeconfig_path
from mpioperator.kube.errors import ApiError, Expired, KubeConfigError, NotFound, WatchInactive
from mpioperator.kube.list_options import ListOptions
from mpioperator.kube.log_options import LogOptions
from mpioperator.kube.resources import EVENTS, MPIJOBS, NAMESPACES, PODS

Obj = dict[str, Any]
USER_AGENT = f"mpioperator-client/{__version__} (python)"
DEFAULT_NAMESPACE = "default"
# A watch the server ends after this long is simply reopened; short enough that a dropped connection is
# noticed within minutes even where nothing sends bookmarks.
WATCH_SECONDS = 240
POLL_SECONDS = 1.0


class AsyncMPIJobClient:
    """MPIJobs in one cluster. `namespace` is the default for every call that takes one.

    Use `from_kubeconfig()` (kubectl's rules: the given path, else $KUBECONFIG, else ~/.kube/config; the
    context's namespace unless one is given), or pass a `KubeClient` you built and still own."""

    def __init__(
        self, kube: KubeClient, *, namespace: str = DEFAULT_NAMESPACE, owns_kube: bool = False
    ) -> None:
        self._kube = kube
        self.namespace = namespace
        self._owns_kube = owns_kube

    @classmethod
    def from_kubeconfig(
        cls,
        kubeconfig: str | os.PathLike[str] | None = None,
        *,
        context: str | None = None,
        namespace: str | None = None,
    ) -> AsyncMPIJobClient:
        path = kubeconfig_path(kubeconfig)
        try:
            kube = KubeClient.from_kubeconfig(
                path, context=context, user_agent=USER_AGENT, qps=50.0, burst=100
            )
            chosen = namespace or context_namespace(path, context) or DEFAULT_NAMESPACE
        except KubeConfigError as exc:
            raise ConfigurationError(str(exc)) from None
        return cls(kube, namespace=chosen, owns_kube=True)

    async def close(self) -> None:
        if self._owns_kube:
            await self._kube.close()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    # -- create, read ------------------------------------------------------------------------------------
    async def create(self, job: Mapping[str, Any], namespace: str | None = None) -> Obj:
        """Submit `job` (a dict, e.g. from MPIJobBuilder.build() or a YAML file) and return it as stored.

        The namespace is the argument's, else the job's own, else the client's."""
        body = dict(job)
        if (
            body.get("kind", api.KIND) != api.KIND
            or body.get("apiVersion", api.API_VERSION) != api.API_VERSION
        ):
            raise InvalidMPIJob(
                _name_of(body),
                f"expected {api.API_VERSION} {api.KIND}, got {body.get('apiVersion')} {body.get('kind')}",
            )
        body.setdefault("apiVersion", api.API_VERSION)
        body.setdefault("kind", api.KIND)
        metadata = dict(body.get("metadata") or {})
        ns = namespace or metadata.get("namespace") or self.namespace
        metadata["namespace"] = ns
        body["metadata"] = metadata
        name = _name_of(body)
        if not name and not metadata.get("generateName"):
            raise InvalidMPIJob("", "metadata.name: Required value")
        try:
            return await self._kube.create(MPIJOBS, body, ns)
        except ApiError as exc:
            raise translate(exc, namespace=ns, name=name) from None

    async def get(self, name: str, namespace: str | None = None) -> Obj:
        ns = namespace or self.namespace
        try:
            return await self._kube.get(MPIJOBS, name, ns)
        except ApiError as exc:
            raise await self._explain(exc, ns, name) from None

    async def list(
        self, namespace: str | None = None, *, all_namespaces: bool = False, label_selector: str | None = None
    ) -> builtins.list[Obj]:
        """MPIJobs in a namespace (or in all), oldest first."""
        ns = None if all_namespaces else (namespace or self.namespace)
        try:
            listed = await self._kube.list(MPIJOBS, ns, ListOptions(label_selector=label_selector))
        except ApiError as exc:
            raise translate(exc, namespace=ns or "") from None
        items: builtins.list[Obj] = listed.get("items") or []
        return sorted(
            items, key=lambda j: (j["metadata"].get("creationTimestamp") or "", j["metadata"]["name"])
        )

    async def pods(self, name: str, namespace: str | None = None) -> builtins.list[Obj]:
        """The job's launcher and worker pods (the operator labels them with the job's name)."""
        ns = namespace or self.namespace
        selector = f"{api.LABEL_JOB_NAME}={name}"
        try:
            listed = await self._kube.list(PODS, ns, ListOptions(label_selector=selector))
        except ApiError as exc:
            raise translate(exc, namespace=ns, name=name) from None
        return list(listed.get("items") or [])

    async def events(self, name: str, namespace: str | None = None) -> builtins.list[Obj]:
        """Events about the job, its launcher Job and its pods, oldest first."""
        ns = namespace or self.namespace
        job = await self.get(name, ns)
        pods = await self.pods(name, ns)
        involved = {job["metadata"].get("uid")} | {p["metadata"].get("uid") for p in pods}
        named = {name, f"{name}{LAUNCHER_SUFFIX}"}
        try:
            listed = await self._kube.list(EVENTS, ns)
        except ApiError as exc:
            raise translate(exc, namespace=ns, name=name) from None
        mine = [
            e
            for e in listed.get("items") or ()
            if (e.get("involvedObject") or {}).get("uid") in involved
            or (e.get("involvedObject") or {}).get("name") in named
        ]
        return sorted(mine, key=_event_time)

    # -- watch, wait -------------------------------------------------------------------------------------
    async def watch(
        self, name: str | None = None, namespace: str | None = None, *, all_namespaces: bool = False
    ) -> AsyncGenerator[tuple[str, Obj], None]:
        """(event type, MPIJob) for every change from now on, ADDED first for what exists; endless, and
        reconnecting when the server ends a watch. With `name`, only that job."""
        ns = None if all_namespaces else (namespace or self.namespace)
        selector = f"metadata.name={name}" if name else None
        while True:
            try:
                listed = await self._kube.list(MPIJOBS, ns, ListOptions(field_selector=selector))
            except ApiError as exc:
                raise translate(exc, namespace=ns or "", name=name or "") from None
            for item in listed.get("items") or ():
                yield "ADDED", item
            version = str((listed.get("metadata") or {}).get("resourceVersion") or "")
            try:
                async with contextlib.aclosing(self._changes(ns, selector, version)) as changes:
                    async for event_type, obj in changes:
                        yield event_type, obj
            except (Expired, WatchInactive):
                continue  # history compacted, or a connection gone quiet: list again
            except ApiError as exc:
                raise translate(exc, namespace=ns or "", name=name or "") from None

    async def _changes(
        self, ns: str | None, selector: str | None, version: str
    ) -> AsyncGenerator[tuple[str, Obj], None]:
        while True:
            stream = self._kube.watch(
                MPIJOBS,
                ns,
                ListOptions(resource_version=version, timeout_seconds=WATCH_SECONDS, field_selector=selector),
            )
            async with contextlib.aclosing(stream) as events:
                async for event in events:
                    obj = event.get("object") or {}
                    version = str((obj.get("metadata") or {}).get("resourceVersion") or version)
                    if event.get("type") != "BOOKMARK":
                        yield str(event.get("type")), obj

    async def wait(
        self,
        name: str,
        namespace: str | None = None,
        *,
        timeout: float | None = None,
        on_change: Callable[[Obj], None] | None = None,
        raise_on_failure: bool = False,
    ) -> Obj:
        """Wait until the job has Succeeded or Failed and return it. `on_change` sees the job at the start
        and at every change of its status; `raise_on_failure` turns Failed into MPIJobFailed; WaitTimeout
        after `timeout` seconds; MPIJobNotFound if it does not exist or is deleted meanwhile."""
        ns = namespace or self.namespace
        seen = [await self.get(name, ns)]  # the latest state, for the timeout's message
        try:
            async with asyncio.timeout(timeout):
                await self._until_finished(name, ns, seen, on_change)
        except TimeoutError:
            raise WaitTimeout(ns, name, timeout or 0, status.phase(seen[-1])) from None
        last = seen[-1]
        if raise_on_failure and status.phase(last) == api.COND_FAILED:
            failed = status.condition(last, api.COND_FAILED) or {}
            raise MPIJobFailed(ns, name, str(failed.get("reason") or ""), str(failed.get("message") or ""))
        return last

    async def _until_finished(
        self, name: str, ns: str, seen: builtins.list[Obj], on_change: Callable[[Obj], None] | None
    ) -> None:
        seen_status: Any = object()
        async with contextlib.aclosing(self.watch(name, ns)) as events:
            async for event_type, obj in events:
                if event_type == "DELETED":
                    raise MPIJobNotFound(ns, name, " (deleted while waiting)")
                seen[0] = obj
                if on_change is not None and obj.get("status") != seen_status:
                    seen_status = obj.get("status")
                    on_change(obj)
                if status.finished(obj):
                    return

    # -- logs ----------------------------------------------------------------------------------------------
    async def launcher_pod(self, name: str, namespace: str | None = None) -> Obj:
        """The job's newest launcher pod; LauncherNotFound while there is none (MPIJobNotFound: no job)."""
        ns = namespace or self.namespace
        selector = f"{api.LABEL_JOB_NAME}={name},{api.LABEL_JOB_ROLE}={api.ROLE_LAUNCHER}"
        try:
            pods = (await self._kube.list(PODS, ns, ListOptions(label_selector=selector))).get("items") or []
        except ApiError as exc:
            raise translate(exc, namespace=ns, name=name) from None
        if not pods:
            await self.get(name, ns)
            raise LauncherNotFound(ns, name)
        return max(pods, key=lambda p: (p["metadata"].get("creationTimestamp") or "", p["metadata"]["name"]))

    async def logs(self, name: str, namespace: str | None = None, *, tail_lines: int | None = None) -> str:
        """The launcher's log so far (its first container's: where mpirun runs)."""
        ns = namespace or self.namespace
        pod = await self.launcher_pod(name, ns)
        try:
            options = LogOptions(container=_first_container(pod), tail_lines=tail_lines)
            return await self._kube.pod_log(pod["metadata"]["name"], ns, options)
        except ApiError as exc:
            raise _log_error(exc, ns, name, pod) from None

    async def follow_logs(
        self, name: str, namespace: str | None = None, *, start_timeout: float | None = None
    ) -> AsyncGenerator[str, None]:
        """The launcher's log line by line until its container ends, as `kubectl logs -f`. Waits (up to
        `start_timeout` seconds, else for ever) for the launcher pod to exist and its container to start."""
        ns = namespace or self.namespace
        try:
            async with asyncio.timeout(start_timeout):
                pod = await self._started_launcher(name, ns)
        except TimeoutError:
            raise LauncherNotFound(ns, name, f"has no started launcher after {start_timeout:g}s") from None
        lines = self._kube.follow_pod_log(pod["metadata"]["name"], ns, container=_first_container(pod))
        try:
            async with contextlib.aclosing(lines) as stream:
                async for line in stream:
                    yield line
        except ApiError as exc:
            raise _log_error(exc, ns, name, pod) from None

    async def _started_launcher(self, name: str, ns: str) -> Obj:
        while True:
            try:
                pod = await self.launcher_pod(name, ns)
            except LauncherNotFound:
                pod = None
            if pod is not None and _container_started(pod):
                return pod
            await asyncio.sleep(POLL_SECONDS)

    # -- change --------------------------------------------------------------------------------------------
    async def suspend(self, name: str, namespace: str | None = None) -> Obj:
        """Set runPolicy.suspend: the operator deletes the job's pods and keeps the job."""
        return await self._set_suspend(name, namespace or self.namespace, True)

    async def resume(self, name: str, namespace: str | None = None) -> Obj:
        return await self._set_suspend(name, namespace or self.namespace, False)

    async def _set_suspend(self, name: str, ns: str, suspended: bool) -> Obj:
        patch = {"spec": {"runPolicy": {"suspend": suspended}}}
        try:
            return await self._kube.patch(MPIJOBS, name, patch, ns)
        except ApiError as exc:
            raise await self._explain(exc, ns, name) from None

    async def delete(
        self, name: str, namespace: str | None = None, *, wait: bool = False, timeout: float | None = None
    ) -> None:
        """Delete the job (its children follow); with `wait`, return once the job itself is gone."""
        ns = namespace or self.namespace
        try:
            # Background, as kubectl: the job goes now and the garbage collector removes its children.
            await self._kube.delete(MPIJOBS, name, ns)
        except ApiError as exc:
            raise await self._explain(exc, ns, name) from None
        if not wait:
            return
        try:
            async with asyncio.timeout(timeout):
                while True:
                    try:
                        await self._kube.get(MPIJOBS, name, ns)
                    except NotFound:
                        return
                    await asyncio.sleep(POLL_SECONDS)
        except TimeoutError:
            raise WaitTimeout(ns, name, timeout or 0, "being deleted") from None

    # -- helpers -------------------------------------------------------------------------------------------
    async def _explain(self, exc: ApiError, ns: str, name: str) -> MPIJobError:
        """translate(), and for a job that is not found, whether a missing namespace is the reason."""
        error = translate(exc, namespace=ns, name=name)
        if not isinstance(error, MPIJobNotFound):
            return error
        try:
            await self._kube.get(NAMESPACES, ns)
        except NotFound:
            return MPIJobNotFound(ns, name, f": namespace {ns!r} does not exist")
        except ApiError:
            pass  # not allowed to look: the plain answer stands
        return error


LAUNCHER_SUFFIX = "-launcher"


def _name_of(job: Mapping[str, Any]) -> str:
    return str((job.get("metadata") or {}).get("name") or "")


def _first_container(pod: Obj) -> str | None:
    containers = (pod.get("spec") or {}).get("containers") or ()
    return str(containers[0]["name"]) if containers else None


def _container_started(pod: Obj) -> bool:
    wanted = _first_container(pod)
    for cs in (pod.get("status") or {}).get("containerStatuses") or ():
        if cs.get("name") == wanted:
            state = cs.get("state") or {}
            return "running" in state or "terminated" in state
    return (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed")


def _log_error(exc: ApiError, ns: str, name: str, pod: Obj) -> MPIJobError:
    if exc.status == 400:
        # The kubelet's own words: "container ... is waiting to start: ContainerCreating" and the like.
        return LauncherNotFound(ns, name, f"launcher pod {pod['metadata']['name']}: {exc.server_message}")
    return translate(exc, namespace=ns, name=name)


def _event_time(event: Obj) -> datetime:
    """When the event last happened; core events carry seconds, events.k8s.io ones microseconds, so
    they are compared as times, not as strings."""
    stamp = str(
        event.get("lastTimestamp")
        or event.get("eventTime")
        or event.get("firstTimestamp")
        or (event.get("metadata") or {}).get("creationTimestamp")
        or ""
    )
    try:
        return datetime.fromisoformat(stamp.replace("Z", "+00:00"))
    except ValueError:
        return _EPOCH


_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
