"""The hooks through which our extensions (docs/extensions.md) join upstream's sync.

The sync (sync.py) runs upstream's steps and, at a fixed set of points, asks every feature of an ordered
`FeatureSet` in turn. A feature overrides only the hooks it needs; every other hook does nothing. Each
feature gets its ports (listers, writer, recorder, the child operations below, the one status-write
path) when it is built (controller/features/__init__.py), and never reaches the child reconciler itself.
docs/architecture.md shows where each feature plugs in.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from mpioperator.api.extensions.parsed import Extensions
from mpioperator.api.field_errors import FieldError
from mpioperator.api.objects import Obj
from mpioperator.clock import Clock, RealClock
from mpioperator.controller.builders.podspec import Decorator
from mpioperator.controller.log_follower import FollowSettings
from mpioperator.controller.ports import Listers, PodLogs, Recorder, Writer
from mpioperator.podgroup.backend import PodGroupBackend


class ChildOperations(Protocol):
    """What a feature may do to the job's children, through the child reconciler's rules."""

    def present_workers(self, job: Obj) -> list[Obj]: ...

    async def withdraw(self, job: Obj, ext: Extensions, pods: list[Obj]) -> None: ...

    async def delete_pod(self, pod: Obj) -> None: ...

    async def ssh_secret(self, job: Obj) -> Obj: ...

    async def stop_launcher(self, job: Obj) -> None: ...


@dataclass(frozen=True, slots=True)
class FeaturePorts:
    listers: Listers
    writer: Writer
    recorder: Recorder
    children: ChildOperations
    # The sync's one status-write path: (cached job, status) -> whether it wrote.
    write_status: Callable[[Obj, Obj], Awaitable[bool]]
    # Tells every feature before the operator deletes any of the job's pods (FeatureSet.before_delete).
    before_delete: Callable[[Obj, Extensions, list[Obj]], Awaitable[None]]
    backend: PodGroupBackend
    exec_agent_image: str | None = None
    # Pods' logs (pods/log): launchers' logs followed by the launcher log feature, a failed rank's last
    # words read once; None: no log is read.
    logs: PodLogs | None = None
    clock: Clock = field(default_factory=RealClock)
    follow: FollowSettings = field(default_factory=FollowSettings)
    cluster_domain: str = ""


@dataclass(frozen=True, slots=True)
class Stop:
    """A feature ends this sync before the children step; the job is looked at again after `requeue_after`.
    `new_attempt`: what the sync observed of the job's pods belongs to an attempt that is over."""

    requeue_after: float
    new_attempt: bool = False


@dataclass(frozen=True, slots=True)
class Seen:
    """What the sync saw of the job's pods, for the hooks that describe them in the status."""

    launcher: Obj | None
    launcher_pods: list[Obj]
    workers: list[Obj]
    now: dt.datetime


class Feature:
    """Every hook, in the order one sync reaches it; each does nothing unless a feature overrides it.

    Each hook of a job gets its extensions as the sync parsed them once from its annotations (`ext`,
    api/extensions/parsed.py): a feature reads them there, never from the annotations again."""

    async def guard(self, cached: Obj, job: Obj, ext: Extensions) -> Obj:
        """Before anything else of a live job: the MPIJob as the API server has it after any write."""
        return cached

    async def on_deleting(self, cached: Obj, job: Obj, ext: Extensions) -> None:
        """The job is being deleted (its deletionTimestamp is set); nothing else runs."""

    def validate(self, job: Obj, ext: Extensions) -> list[FieldError]:
        """What this feature finds wrong with the job beside the API's validation; any problem makes the
        job Invalid (one Warning and a condition) and nothing of it is made."""
        return []

    async def before_children(
        self, cached: Obj, job: Obj, ext: Extensions, now: dt.datetime, suspended: bool
    ) -> Stop | None:
        """Before upstream's children step; a `Stop` ends the sync there."""
        return None

    async def with_launcher(self, job: Obj, ext: Extensions, launcher: Obj | None) -> bool:
        """The launcher Job the cache has; True when it is to be made anew (the sync treats it as absent)."""
        return False

    def hostfile_addresses(self, job: Obj, ext: Extensions, workers: list[Obj]) -> Mapping[str, str] | None:
        """The address the hostfile gives each of the job's worker pods, when it is not upstream's DNS name
        (only workers that have one are listed); None: upstream's names."""
        return None

    async def with_shared_children(self, job: Obj, ext: Extensions, now: dt.datetime) -> float | None:
        """Beside the Service and ConfigMap; a number of seconds when the job must wait (makes no pods this
        sync) and be looked at again then."""
        return None

    async def before_pods(self, job: Obj, ext: Extensions, now: dt.datetime) -> bool:
        """Before any pod of an unfinished job; False makes no pods this sync."""
        return True

    async def before_workers(self, job: Obj, ext: Extensions, launcher: Obj | None) -> None:
        """Just before the workers are made (not when suspended or waiting)."""

    async def after_workers(
        self, job: Obj, ext: Extensions, launcher: Obj | None, workers: list[Obj]
    ) -> tuple[bool, Obj | None]:
        """After the workers; (whether the launcher must wait, the launcher as it now stands)."""
        return False, launcher

    def launcher_created(self, job: Obj, ext: Extensions, launcher: Obj) -> None:
        """The launcher Job was just made."""

    def decorate_launcher(self, job: Obj, ext: Extensions, decorate: Decorator | None) -> Decorator | None:
        """The launcher's pod decorator, wrapped with this feature's additions."""
        return decorate

    async def before_delete(self, job: Obj, ext: Extensions, pods: list[Obj]) -> None:
        """Just before the operator deletes any of the job's pods."""

    async def after_clean_up(self, job: Obj, ext: Extensions) -> None:
        """After upstream's cleanUpWorkerPods (finished or suspended job)."""

    async def follow(self, job: Obj, ext: Extensions, workers: list[Obj]) -> None:
        """Every sync's last child step, for an invalid, held, suspended or finished job too."""

    def failure_detail(self, job: Obj, ext: Extensions, detail: str) -> str:
        """The failure detail the status is computed with."""
        return detail

    def amend_status(self, status: Obj, now: dt.datetime) -> None:
        """The computed status, before the pods are reported in it."""

    def describe(self, job: Obj, ext: Extensions, status: Obj, seen: Seen) -> None:
        """The status after its events are recorded, before it is written."""

    def recheck_after(self, job: Obj, ext: Extensions, now: dt.datetime) -> float | None:
        """At the end of a sync of an unfinished job: seconds after which the feature wants it looked at
        again although nothing about it changed; None when it does not."""
        return None

    def forget(self, uid: str) -> None:
        """The job finished or went: what the feature kept of it (by uid) goes, the pods it read with it."""


class FeatureSet:
    """The features in the order the sync asks them; built once (controller/features/__init__.py).

    A hook asks only the features that override it: the others' no-op would cost a call each, at every
    hook of every sync."""

    def __init__(self, features: Sequence[Feature] = ()) -> None:
        self.use(features)

    def use(self, features: Sequence[Feature]) -> None:
        self._features = list(features)
        self._asked: dict[str, list[Feature]] = {}

    def _with(self, hook: str) -> list[Feature]:
        asked = self._asked.get(hook)
        if asked is None:
            default = getattr(Feature, hook)
            asked = self._asked[hook] = [f for f in self._features if getattr(type(f), hook) is not default]
        return asked

    async def guard(self, cached: Obj, job: Obj, ext: Extensions) -> Obj:
        for feature in self._with("guard"):
            cached = await feature.guard(cached, job, ext)
        return cached

    async def on_deleting(self, cached: Obj, job: Obj, ext: Extensions) -> None:
        for feature in self._with("on_deleting"):
            await feature.on_deleting(cached, job, ext)

    def validate(self, job: Obj, ext: Extensions) -> list[FieldError]:
        return [problem for feature in self._with("validate") for problem in feature.validate(job, ext)]

    async def before_children(
        self, cached: Obj, job: Obj, ext: Extensions, now: dt.datetime, suspended: bool
    ) -> Stop | None:
        for feature in self._with("before_children"):
            if (stop := await feature.before_children(cached, job, ext, now, suspended)) is not None:
                return stop
        return None

    async def with_launcher(self, job: Obj, ext: Extensions, launcher: Obj | None) -> bool:
        renew = False
        for feature in self._with("with_launcher"):
            renew = await feature.with_launcher(job, ext, launcher) or renew
        return renew

    def hostfile_addresses(self, job: Obj, ext: Extensions, workers: list[Obj]) -> Mapping[str, str] | None:
        """The first feature's addresses that are not upstream's names."""
        for feature in self._with("hostfile_addresses"):
            if (addresses := feature.hostfile_addresses(job, ext, workers)) is not None:
                return addresses
        return None

    async def with_shared_children(self, job: Obj, ext: Extensions, now: dt.datetime) -> float | None:
        """The shortest wait any feature asks for; None when none waits."""
        waits = [
            await feature.with_shared_children(job, ext, now)
            for feature in self._with("with_shared_children")
        ]
        return min((w for w in waits if w is not None), default=None)

    async def before_pods(self, job: Obj, ext: Extensions, now: dt.datetime) -> bool:
        allowed = True
        for feature in self._with("before_pods"):
            allowed = await feature.before_pods(job, ext, now) and allowed
        return allowed

    async def before_workers(self, job: Obj, ext: Extensions, launcher: Obj | None) -> None:
        for feature in self._with("before_workers"):
            await feature.before_workers(job, ext, launcher)

    async def after_workers(
        self, job: Obj, ext: Extensions, launcher: Obj | None, workers: list[Obj]
    ) -> tuple[bool, Obj | None]:
        wait = False
        for feature in self._with("after_workers"):
            waits, launcher = await feature.after_workers(job, ext, launcher, workers)
            wait = wait or waits
        return wait, launcher

    def launcher_created(self, job: Obj, ext: Extensions, launcher: Obj) -> None:
        for feature in self._with("launcher_created"):
            feature.launcher_created(job, ext, launcher)

    def decorate_launcher(self, job: Obj, ext: Extensions, decorate: Decorator | None) -> Decorator | None:
        for feature in self._with("decorate_launcher"):
            decorate = feature.decorate_launcher(job, ext, decorate)
        return decorate

    async def before_delete(self, job: Obj, ext: Extensions, pods: list[Obj]) -> None:
        for feature in self._with("before_delete"):
            await feature.before_delete(job, ext, pods)

    async def after_clean_up(self, job: Obj, ext: Extensions) -> None:
        for feature in self._with("after_clean_up"):
            await feature.after_clean_up(job, ext)

    async def follow(self, job: Obj, ext: Extensions, workers: list[Obj]) -> None:
        for feature in self._with("follow"):
            await feature.follow(job, ext, workers)

    def failure_detail(self, job: Obj, ext: Extensions, detail: str) -> str:
        for feature in self._with("failure_detail"):
            detail = feature.failure_detail(job, ext, detail)
        return detail

    def amend_status(self, status: Obj, now: dt.datetime) -> None:
        for feature in self._with("amend_status"):
            feature.amend_status(status, now)

    def describe(self, job: Obj, ext: Extensions, status: Obj, seen: Seen) -> None:
        for feature in self._with("describe"):
            feature.describe(job, ext, status, seen)

    def recheck_after(self, job: Obj, ext: Extensions, now: dt.datetime) -> float | None:
        """The soonest revisit any feature asks for; None when none does."""
        waits = [feature.recheck_after(job, ext, now) for feature in self._with("recheck_after")]
        return min((w for w in waits if w is not None), default=None)

    def forget(self, uid: str) -> None:
        for feature in self._with("forget"):
            feature.forget(uid)


FeatureFactory = Callable[[FeaturePorts], Sequence[Feature]]
