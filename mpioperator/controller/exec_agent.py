"""The sync's steps for jobs that ask for the exec launch agent (`mpioperator.io/launch-agent: exec`).

Allowed only when the operator runs with --exec-agent, because the operator then grants pods/exec. A job
that asks without it gets the condition `ExecAgentNotAllowed` and one Warning event, and no pods: the flag
changes only with a restart of the operator, which syncs every job again, so nothing is retried.

The per-job ServiceAccount, Role and RoleBinding are not watched (an operator without the flag must not
need to list them): each is created once, or read and corrected when it exists, and then remembered by
the job's uid and what it must say, so a converged job costs no request.
"""

from __future__ import annotations

import datetime as dt
from collections import OrderedDict

from mpioperator.api import constants as api
from mpioperator.api import extensions
from mpioperator.api.objects import Obj, json_copy
from mpioperator.api.ownership import is_controlled_by
from mpioperator.controller import conditions
from mpioperator.controller.builders import exec_agent
from mpioperator.controller.builders.podspec import Decorator
from mpioperator.controller.errors import SyncError
from mpioperator.controller.events import WARNING
from mpioperator.controller.ports import Recorder, Writer
from mpioperator.controller.rejections import not_managed_message, refused
from mpioperator.kube import errors
from mpioperator.kube.resources import Resource

SERVICE_ACCOUNTS = Resource("", "v1", "serviceaccounts", "ServiceAccount")
ROLES = Resource("rbac.authorization.k8s.io", "v1", "roles", "Role")
ROLE_BINDINGS = Resource("rbac.authorization.k8s.io", "v1", "rolebindings", "RoleBinding")

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
)

COND_NOT_ALLOWED = "ExecAgentNotAllowed"
REASON_NOT_ALLOWED = "ExecAgentNotAllowed"


def not_allowed_message(job: Obj) -> str:
    ns, name = job["metadata"].get("namespace", ""), job["metadata"]["name"]
    return (
        f"MPIJob {ns}/{name} asks for the exec launch agent ({extensions.LAUNCH_AGENT}: "
        f"{extensions.AGENT_EXEC}), which this operator does not allow: it runs without --exec-agent. "
        "Ask your administrator, or remove the annotation and run sshd in the workers"
    )


class ExecAgent:
    def __init__(self, writer: Writer, recorder: Recorder, image: str | None, capacity: int = 20_000) -> None:
        self._w = writer
        self._rec = recorder
        self._image = image  # None: the operator runs without --exec-agent
        self._done: OrderedDict[tuple[str, str], str] = OrderedDict()
        # Jobs warned by this process: its own status write may not be in the cache by the next sync.
        self._warned: OrderedDict[str, None] = OrderedDict()
        self._capacity = capacity

    def launcher_decorator(self, job: Obj, decorate: Decorator | None) -> Decorator | None:
        if self._image is None or not extensions.exec_agent(job):
            return decorate
        return exec_agent.with_exec_agent(decorate, job, self._image)

    async def prepare(self, job: Obj, status: Obj, now: dt.datetime) -> bool:
        """The job's RBAC for the agent, when it asks for the agent; False when it may not have it."""
        if not extensions.exec_agent(job):
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

    async def grant(self, job: Obj, workers: list[Obj]) -> None:
        """The Role, naming the workers just made or found, all controlled by the job (the children step
        refuses to go on past a pod of that name that is not), and its binding, before the launcher."""
        if self._image is None or not extensions.exec_agent(job):
            return
        names = [w["metadata"]["name"] for w in workers]
        await self._ensure(job, ROLES, exec_agent.new_role(job, names), ("rules",))
        # After the Role: the API server checks that whoever binds a Role holds what it grants, and
        # answers 404 for a Role it cannot find (an administrator's credentials skip that check).
        await self._ensure(job, ROLE_BINDINGS, exec_agent.new_role_binding(job), ("subjects",))

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
