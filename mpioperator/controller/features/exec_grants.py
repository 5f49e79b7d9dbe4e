"""The exec launch agent's grant follows the job's live workers (docs/extensions.md "The exec launch agent").

The Role `<job>-launcher` lets the launcher exec into pods by name. A name outlives its pod: someone
else's later pod of that name (a StatefulSet's `<job>-worker-0`, a later MPIJob's) would be exec-able by
whatever runs as `<job>-launcher`. So:
- every sync of an exec-agent job writes the Role to name exactly the workers that exist, are the job's,
  belong to its current attempt (whole-job restarts) and are not terminating, `rules: []` when none;
- a name leaves the Role before the operator deletes its pod (`withdraw`, called by every deleting step);
- the finalizer `mpioperator.io/exec-grants` (on exec-agent jobs only) empties the Role and deletes the
  binding before the job goes, whatever the deletion's propagation, and when the job stops asking for the
  agent or the operator stops allowing it (decisions-local L43);
- a Role or RoleBinding of that name that the operator did not make is refused and never written to.

The Role and binding are not watched (an operator without the flag must not need to list them): what
was written is remembered by the job's uid, so a converged job costs no request.
"""

from __future__ import annotations

import contextlib
from collections import OrderedDict

import structlog

from mpioperator.api import constants as api
from mpioperator.api.extensions import restarts as policy
from mpioperator.api.objects import Obj, json_copy
from mpioperator.api.ownership import is_controlled_by
from mpioperator.controller.bounded import BoundedSet
from mpioperator.controller.decorators import exec_agent_objects as exec_agent
from mpioperator.controller.errors import SyncError
from mpioperator.controller.ports import Listers, Writer
from mpioperator.controller.rejections import ChildRejected, not_managed_message, refused
from mpioperator.kube import errors
from mpioperator.kube.delete_options import DeleteOptions
from mpioperator.kube.resources import MPIJOBS, Resource

log = structlog.get_logger(__name__)

ROLES = Resource("rbac.authorization.k8s.io", "v1", "roles", "Role")
ROLE_BINDINGS = Resource("rbac.authorization.k8s.io", "v1", "rolebindings", "RoleBinding")
FINALIZER = exec_agent.FINALIZER
ENDED = ("Succeeded", "Failed")


def made_by_operator(obj: Obj, job: Obj) -> bool:
    """A Role or binding the operator made for `job`: controlled by it and carrying the operator's label
    with its uid. Neither can prove who made it (a tenant may write both); what the rule buys and what
    bounds the rest is in decisions-local L43."""
    return is_controlled_by(obj, job) and exec_agent.made_for(obj, job)


def _index(pod: Obj) -> int:
    label = ((pod.get("metadata") or {}).get("labels") or {}).get(api.LABEL_REPLICA_INDEX, "")
    return int(label) if str(label).isdigit() else -1


class ExecGrants:
    def __init__(self, listers: Listers, writer: Writer, capacity: int = 20_000) -> None:
        self._l = listers
        self._w = writer
        self._capacity = capacity
        # Per job uid: the worker names its Role was last written (or found) to grant.
        self._roles: OrderedDict[str, tuple[str, ...]] = OrderedDict()
        self._bound: OrderedDict[str, None] = OrderedDict()
        # Pods this process is deleting or has deleted: never named again, though the cache still has them.
        self._withdrawn = BoundedSet[str](capacity)

    # --- the Role follows the workers ------------------------------------------------------------------

    def live_workers(self, job: Obj, made: list[Obj]) -> list[str]:
        """The names to grant: the workers of this sync (made or found) and the cache's, those that are the
        job's, of its current attempt, neither terminating nor ended, by index."""
        by_name = {p["metadata"]["name"]: p for p in self._l.pods.owned_by(job["metadata"].get("uid", ""))}
        by_name.update((p["metadata"]["name"], p) for p in made)
        attempt = policy.current_attempt(job)
        live = [
            pod
            for pod in by_name.values()
            if ((pod["metadata"].get("labels") or {}).get(api.LABEL_JOB_ROLE) == api.ROLE_WORKER)
            and is_controlled_by(pod, job)
            and policy.attempt_of(pod) == attempt
            and not pod["metadata"].get("deletionTimestamp")
            # An ended pod has nothing to exec into, and goes at once when deleted, with no terminating
            # phase in which to take its name out first (an evicted worker, the pod collector's delete).
            and (pod.get("status") or {}).get("phase") not in ENDED
            and not self._withdrawn.seen(pod["metadata"].get("uid", ""))
        ]
        return [p["metadata"]["name"] for p in sorted(live, key=lambda p: (_index(p), p["metadata"]["name"]))]

    async def follow(self, job: Obj, made: list[Obj], *, strict: bool) -> None:
        """The Role names the live workers, and is bound once it names any. `strict`: a Role or binding
        of that name that the operator did not make raises the refusal (the children step, which holds
        the job); otherwise it is left alone (the step already said so)."""
        names = self.live_workers(job, made)
        if await self._write_role(job, names, strict=strict) and names:
            await self._bind(job, strict=strict)

    async def withdraw(self, job: Obj, pods: list[Obj]) -> None:
        """Before the operator deletes `pods`: their names leave the Role first."""
        workers = [
            p for p in pods if (p["metadata"].get("labels") or {}).get(api.LABEL_JOB_ROLE) == api.ROLE_WORKER
        ]
        for pod in workers:
            self._withdrawn.add(pod["metadata"].get("uid", ""))
        if not workers:
            return
        uid = job["metadata"].get("uid", "")
        going = {p["metadata"]["name"] for p in workers}
        known = self._roles.get(uid)
        if known is not None:
            if going.isdisjoint(known):
                return
            names = [n for n in known if n not in going]
        else:
            names = self.live_workers(job, [])
        await self._write_role(job, names, strict=False)

    async def _write_role(self, job: Obj, names: list[str], *, strict: bool) -> bool:
        """Whether the Role now says `names` (False: it is not the operator's, and was left alone)."""
        uid = job["metadata"].get("uid", "")
        if self._roles.get(uid) == tuple(names):
            return True
        desired = exec_agent.new_role(job, names)
        ns, name = job["metadata"].get("namespace", ""), desired["metadata"]["name"]
        found: Obj | None = None
        if names:
            try:
                await self._w.create(ROLES, desired, ns)
            except errors.AlreadyExists:
                found = await self._get(ROLES, name, ns)
            except errors.ApiError as exc:
                raise refused(exc, ROLES.kind, name, "created", f"Role {name}") from exc
        else:
            # Nothing to grant: nothing is created, only a Role of ours that grants something is emptied.
            found = await self._get(ROLES, name, ns)
            if found is None:
                self._remember_role(uid, names)
                return True
        if found is not None:
            if not made_by_operator(found, job):
                if strict and names:
                    raise _not_ours(ROLES, name)
                return False
            await self._set_field(ROLES, found, ns, "rules", desired["rules"])
        self._remember_role(uid, names)
        return True

    async def _bind(self, job: Obj, *, strict: bool) -> None:
        # After the Role: the API server checks that whoever binds a Role holds what it grants, and
        # answers 404 for a Role it cannot find (an administrator's credentials skip that check).
        uid = job["metadata"].get("uid", "")
        if uid in self._bound:
            return
        desired = exec_agent.new_role_binding(job)
        ns, name = job["metadata"].get("namespace", ""), desired["metadata"]["name"]
        try:
            await self._w.create(ROLE_BINDINGS, desired, ns)
        except errors.AlreadyExists:
            found = await self._get(ROLE_BINDINGS, name, ns)
            if found is not None and not made_by_operator(found, job):
                if strict:
                    raise _not_ours(ROLE_BINDINGS, name) from None
                return
            if found is not None:
                await self._set_field(ROLE_BINDINGS, found, ns, "subjects", desired["subjects"])
        except errors.ApiError as exc:
            raise refused(exc, ROLE_BINDINGS.kind, name, "created", f"RoleBinding {name}") from exc
        self._bound[uid] = None
        while len(self._bound) > self._capacity:
            self._bound.popitem(last=False)

    async def _set_field(self, res: Resource, found: Obj, ns: str, field: str, desired: object) -> None:
        """Update one top-level field of a Role or RoleBinding of ours that differs from what it should be."""
        if (found.get(field) or []) == desired:
            return
        updated = json_copy(found)
        updated[field] = desired
        name = found["metadata"]["name"]
        try:
            await self._w.update(res, updated, ns)
        except errors.ApiError as exc:
            raise refused(exc, res.kind, name, "updated", f"{res.kind} {name}") from exc

    # --- revoking, and the finalizer -------------------------------------------------------------------

    async def revoke(self, job: Obj) -> bool:
        """Empty the job's Role and delete its binding (the operator's, found by its label once an orphaning
        deletion took the controller reference away); False when the operator may not (403)."""
        ns = job["metadata"].get("namespace", "")
        name = exec_agent.account_name(job)
        uid = job["metadata"].get("uid", "")
        try:
            found = await self._get(ROLES, name, ns)
            if found is not None and _ours_or_orphaned(found, job) and found.get("rules"):
                emptied = json_copy(found)
                emptied["rules"] = []
                with contextlib.suppress(errors.NotFound):
                    await self._w.update(ROLES, emptied, ns)
            bound = await self._get(ROLE_BINDINGS, name, ns)
            if bound is not None and _ours_or_orphaned(bound, job):
                only = DeleteOptions.if_uid(bound["metadata"].get("uid"))
                with contextlib.suppress(errors.NotFound, errors.Conflict):
                    await self._w.delete(ROLE_BINDINGS, name, ns, only)
        except errors.Forbidden as exc:
            log.warning(
                "may not revoke the exec agent's grants",
                job=f"{ns}/{job['metadata']['name']}",
                error=str(exc),
            )
            return False
        except errors.ApiError as exc:
            raise SyncError(f"revoking the exec agent's grants: {exc.server_message}") from exc
        self._roles.pop(uid, None)
        self._bound.pop(uid, None)
        return True

    async def set_finalizer(self, cached: Obj, present: bool) -> Obj:
        """The job with our finalizer added or removed (the MPIJob as the API server answered); `cached`
        unchanged when it already is so. With the cached resourceVersion: a Conflict retries the sync."""
        meta = cached["metadata"]
        current = list(meta.get("finalizers") or ())
        if (FINALIZER in current) == present:
            return cached
        wanted = [*current, FINALIZER] if present else [f for f in current if f != FINALIZER]
        target = json_copy(cached)
        target["metadata"]["finalizers"] = wanted
        try:
            written: Obj = await self._w.update(MPIJOBS, target, meta.get("namespace"))
        except errors.NotFound:
            return cached
        except errors.ApiError as exc:
            raise SyncError(
                f"{'adding' if present else 'removing'} finalizer {FINALIZER}: {exc.server_message}"
            ) from exc
        return written

    async def _get(self, res: Resource, name: str, ns: str) -> Obj | None:
        try:
            found: Obj = await self._w.get(res, name, ns)
            return found
        except errors.NotFound:
            return None
        except errors.Forbidden:
            raise
        except errors.ApiError as exc:
            raise SyncError(f"getting {res.kind} {name}: {exc.server_message}") from exc

    def _remember_role(self, uid: str, names: list[str]) -> None:
        self._roles[uid] = tuple(names)
        self._roles.move_to_end(uid)
        while len(self._roles) > self._capacity:
            self._roles.popitem(last=False)

    def forget(self, uid: str) -> None:
        self._roles.pop(uid, None)
        self._bound.pop(uid, None)


def _ours_or_orphaned(obj: Obj, job: Obj) -> bool:
    """Emptying and deleting only take rights away, so an object of the operator's label for this job is
    revoked also when it has no controller reference left (an orphaning deletion removed it)."""
    if made_by_operator(obj, job):
        return True
    refs = (obj.get("metadata") or {}).get("ownerReferences") or ()
    return exec_agent.made_for(obj, job) and not any(r.get("controller") for r in refs)


def _not_ours(res: Resource, name: str) -> ChildRejected:
    """The refusal that holds the job with ChildRejected (reason ErrResourceExists) and one event."""
    message = not_managed_message(name, res.kind)
    return ChildRejected(res.kind, name, "created", errors.AlreadyExists(409, "AlreadyExists", message))
