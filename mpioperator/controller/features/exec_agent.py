"""The sync's steps for jobs that ask for the exec launch agent (`mpioperator.io/launch-agent: exec`).

Allowed only when the operator runs with --exec-agent, because the operator then grants pods/exec. A job
that asks without it gets the condition `ExecAgentNotAllowed` and one Warning event, and no pods: the flag
changes only with a restart of the operator, which syncs every job again, so nothing is retried.

The per-job ServiceAccount, Role and RoleBinding are not watched (an operator without the flag must not
need to list them): each is created once, or read and corrected when it exists, and then remembered by
the job's uid and what it must say, so a converged job costs no request. The Role follows the job's live
workers and is revoked by a finalizer (exec_grants.py).
"""

from __future__ import annotations

import datetime as dt
from collections import OrderedDict

from mpioperator.api import constants as api
from mpioperator.api.extensions import launch
from mpioperator.api.extensions.parsed import Extensions
from mpioperator.api.objects import Obj, json_copy
from mpioperator.api.ownership import is_controlled_by
from mpioperator.controller import conditions
from mpioperator.controller.builders.podspec import Decorator
from mpioperator.controller.decorators import exec_agent_objects as exec_agent
from mpioperator.controller.errors import SyncError
from mpioperator.controller.events import WARNING
from mpioperator.controller.feature import Feature, FeaturePorts
from mpioperator.controller.features.exec_grants import FINALIZER, ROLE_BINDINGS, ROLES, ExecGrants
from mpioperator.controller.ports import Listers, Recorder, Writer
from mpioperator.controller.rejections import not_managed_message, refused
from mpioperator.kube import errors
from mpioperator.kube.resources import Resource

SERVICE_ACCOUNTS = Resource("", "v1", "serviceaccounts", "ServiceAccount")

# What the operator itself must hold to run the agent, as (API group, resource, subresource, verb): RBAC
# lets a subject grant in a Role only what it holds, so pods/exec; and the rights this module uses on the
# per-job ServiceAccount, Role and RoleBinding. The start-up check asks for each (app/startup.py).
OPERATOR_RIGHTS: tuple[tuple[str, str, str, str], ...] = (
    ("", "pods", "exec", "create"),
    *(("", SERVICE_ACCOUNTS.plural, "", verb) for verb in ("get", "create")),
    *(
        (ROLES.group, res.plural, "", verb)
        for res in (ROLES, ROLE_BINDINGS)
        for verb in ("get", "create", "update")
    ),
    # A revoked grant's binding goes (its Role stays, empty, for the garbage collector).
    (ROLE_BINDINGS.group, ROLE_BINDINGS.plural, "", "delete"),
)

COND_NOT_ALLOWED = "ExecAgentNotAllowed"
REASON_NOT_ALLOWED = "ExecAgentNotAllowed"


def not_allowed_message(job: Obj) -> str:
    ns, name = job["metadata"].get("namespace", ""), job["metadata"]["name"]
    return (
        f"MPIJob {ns}/{name} asks for the exec launch agent ({launch.LAUNCH_AGENT}: "
        f"{launch.AGENT_EXEC}), which this operator does not allow: it runs without --exec-agent. "
        "Ask your administrator, or remove the annotation and run sshd in the workers"
    )


class ExecAgent:
    def __init__(
        self, listers: Listers, writer: Writer, recorder: Recorder, image: str | None, capacity: int = 20_000
    ) -> None:
        self._w = writer
        self._grants = ExecGrants(listers, writer, capacity)
        self._rec = recorder
        self._image = image  # None: the operator runs without --exec-agent
        self._done: OrderedDict[tuple[str, str], str] = OrderedDict()
        # Jobs warned by this process: its own status write may not be in the cache by the next sync.
        self._warned: OrderedDict[str, None] = OrderedDict()
        self._capacity = capacity

    def launcher_decorator(self, job: Obj, ext: Extensions, decorate: Decorator | None) -> Decorator | None:
        if self._image is None or not ext.launch.exec_agent:
            return decorate
        return exec_agent.with_exec_agent(decorate, job, self._image)

    async def prepare(self, job: Obj, ext: Extensions, status: Obj, now: dt.datetime) -> bool:
        """The job's RBAC for the agent, when it asks for the agent; False when it may not have it."""
        if not ext.launch.exec_agent:
            _drop(status)
            return True
        if self._image is None:
            uid = job["metadata"].get("uid", "")
            if _put(status, not_allowed_message(job), now) and uid not in self._warned:
                self._rec.record(job, WARNING, REASON_NOT_ALLOWED, not_allowed_message(job))
                self._warned[uid] = None
                while len(self._warned) > self._capacity:
                    self._warned.popitem(last=False)
            return False
        _drop(status)
        account = exec_agent.new_service_account(job)
        await self._ensure(job, SERVICE_ACCOUNTS, account, ())
        return True

    def _active(self, ext: Extensions) -> bool:
        return self._image is not None and ext.launch.exec_agent

    async def grant(self, job: Obj, ext: Extensions, workers: list[Obj]) -> None:
        """The Role, naming the live workers (those just made or found among them), and its binding, before
        the launcher; a Role or binding of that name the operator did not make holds the job."""
        if self._active(ext):
            await self._grants.follow(job, workers, strict=True)

    async def follow(self, job: Obj, ext: Extensions, workers: list[Obj]) -> None:
        """Every sync's last word on the Role: the live workers, for a finished, suspended or held job too."""
        if self._active(ext):
            await self._grants.follow(job, workers, strict=False)

    async def withdraw(self, job: Obj, ext: Extensions, pods: list[Obj]) -> None:
        """Called before the operator deletes any of the job's pods: their names leave the Role first."""
        if self._active(ext):
            await self._grants.withdraw(job, pods)

    async def guard(self, cached: Obj, job: Obj, ext: Extensions) -> Obj:
        """The finalizer on an exec-agent job before anything is granted; off a job that no longer asks for
        the agent, or whose operator no longer allows it, once its grants are revoked. The MPIJob as the
        API server has it after the write (`cached` when nothing was written)."""
        has = FINALIZER in (cached["metadata"].get("finalizers") or ())
        if self._active(ext):
            return cached if has else await self._grants.set_finalizer(cached, True)
        if not has:
            return cached
        await self._grants.revoke(job)
        return await self._grants.set_finalizer(cached, False)

    async def release(self, cached: Obj, job: Obj) -> None:
        """A job being deleted: its grants revoked, then its finalizer removed. An operator that may not
        revoke (403: the rights taken away) still removes it, so the deletion is never blocked."""
        if FINALIZER not in (cached["metadata"].get("finalizers") or ()):
            return
        await self._grants.revoke(job)
        await self._grants.set_finalizer(cached, False)
        self._grants.forget(job["metadata"].get("uid", ""))

    async def _ensure(self, job: Obj, res: Resource, desired: Obj, fields: tuple[str, ...]) -> None:
        uid = job["metadata"].get("uid", "")
        want = repr([desired.get(f) for f in fields])
        key = (uid, res.plural)
        if self._done.get(key) == want:
            return
        ns, name = job["metadata"].get("namespace", ""), desired["metadata"]["name"]
        what = f"{res.kind} {name}"
        try:
            await self._w.create(res, desired, ns)
        except errors.AlreadyExists:
            await self._correct(job, res, desired, fields, what)
        except errors.ApiError as exc:
            raise refused(exc, res.kind, name, "created", what) from exc
        self._remember(key, want)

    async def _correct(
        self, job: Obj, res: Resource, desired: Obj, fields: tuple[str, ...], what: str
    ) -> None:
        """An object of that name exists (ours from an earlier sync or leader, or someone else's)."""
        ns, name = job["metadata"].get("namespace", ""), desired["metadata"]["name"]
        try:
            found = await self._w.get(res, name, ns)
        except errors.ApiError as exc:
            raise SyncError(f"getting {what}: {exc.server_message}") from exc
        if not is_controlled_by(found, job):
            message = not_managed_message(name, res.kind)
            self._rec.record(job, WARNING, api.REASON_RESOURCE_EXISTS, message)
            raise SyncError(message)
        if all(found.get(f) == desired.get(f) for f in fields):
            return
        updated = json_copy(found)
        for f in fields:
            updated[f] = json_copy(desired.get(f))
        try:
            await self._w.update(res, updated, ns)
        except errors.ApiError as exc:
            raise refused(exc, res.kind, name, "updated", what) from exc

    def _remember(self, key: tuple[str, str], want: str) -> None:
        self._done[key] = want
        self._done.move_to_end(key)
        while len(self._done) > self._capacity:
            self._done.popitem(last=False)


def _drop(status: Obj) -> None:
    if conditions.find(status, COND_NOT_ALLOWED) is not None:
        status["conditions"] = [
            c for c in status.get("conditions") or () if c.get("type") != COND_NOT_ALLOWED
        ]


def _put(status: Obj, message: str, now: dt.datetime) -> bool:
    """The condition, True; False when the job already had it with this message."""
    current = conditions.find(status, COND_NOT_ALLOWED) or {}
    if current.get("status") == conditions.TRUE and current.get("message") == message:
        return False
    others = [c for c in status.get("conditions") or () if c.get("type") != COND_NOT_ALLOWED]
    new = conditions.new_condition(COND_NOT_ALLOWED, conditions.TRUE, REASON_NOT_ALLOWED, message, now)
    status["conditions"] = [*others, new]
    return True


class ExecAgentFeature(Feature):
    def __init__(self, ports: FeaturePorts) -> None:
        self._agent = ExecAgent(ports.listers, ports.writer, ports.recorder, ports.exec_agent_image)

    async def guard(self, cached: Obj, job: Obj, ext: Extensions) -> Obj:
        return await self._agent.guard(cached, job, ext)  # its finalizer on (or off) the job

    async def on_deleting(self, cached: Obj, job: Obj, ext: Extensions) -> None:
        await self._agent.release(cached, job)  # the grants revoked before the finalizer goes

    async def before_pods(self, job: Obj, ext: Extensions, now: dt.datetime) -> bool:
        return await self._agent.prepare(job, ext, job["status"], now)

    async def after_workers(
        self, job: Obj, ext: Extensions, launcher: Obj | None, workers: list[Obj]
    ) -> tuple[bool, Obj | None]:
        await self._agent.grant(job, ext, workers)
        return False, launcher

    def decorate_launcher(self, job: Obj, ext: Extensions, decorate: Decorator | None) -> Decorator | None:
        return self._agent.launcher_decorator(job, ext, decorate)

    async def before_delete(self, job: Obj, ext: Extensions, pods: list[Obj]) -> None:
        await self._agent.withdraw(job, ext, pods)

    async def follow(self, job: Obj, ext: Extensions, workers: list[Obj]) -> None:
        await self._agent.follow(job, ext, workers)
