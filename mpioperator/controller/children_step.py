"""Upstream's children step of one sync, with the features' hooks (controller/feature.py).

The Service, ConfigMap, workers and launcher, in upstream's order; a job held after a refusal (L11) makes
nothing until its hold ends. What the step left (the launcher and workers to report on, and why it
stopped) goes back to the sync, which computes the status from it.
"""

from __future__ import annotations

import asyncio
import datetime as dt
from dataclasses import dataclass

import structlog

from mpioperator.api.extensions.parsed import Extensions
from mpioperator.api.objects import Obj
from mpioperator.controller import child_state
from mpioperator.controller.children import ChildReconciler
from mpioperator.controller.feature import FeatureSet
from mpioperator.controller.pod_state import PodStates
from mpioperator.controller.rejections import ChildRejected, Holds

log = structlog.get_logger(__name__)


@dataclass(slots=True)
class Step:
    """What the children step left: the launcher and workers to report on, and why it stopped, if it did."""

    launcher: Obj | None
    workers: list[Obj]
    rejection: ChildRejected | None = None
    held_for: float | None = None
    recheck_after: float | None = None  # a feature's wait (e.g. for the user's own SSH Secret)

    @property
    def held(self) -> bool:
        return self.held_for is not None


class ChildrenStep:
    def __init__(self, children: ChildReconciler, features: FeatureSet) -> None:
        self._children = children
        self._features = features
        self._holds = Holds()

    async def run(
        self, job: Obj, ext: Extensions, *, suspended: bool, now: dt.datetime, states: PodStates | None = None
    ) -> Step:
        """Upstream's children step, unless the job is held after a refusal (L11), with our extensions'
        hooks (docs/extensions.md): debug mode's end, the user's own SSH Secret, the worker roll (L14).
        `states`: the sync's pod descriptions (pod_state.py)."""
        states = states or PodStates()
        meta = job["metadata"]
        uid, generation = meta.get("uid", ""), int(meta.get("generation") or 0)
        clock = now.timestamp()
        workers: list[Obj] = []
        launcher: Obj | None = None
        done = rolled = renewing = refused = False
        waits_for: float | None = None
        try:
            launcher = self._children.launcher(job)
            if renewing := await self._features.with_launcher(job, ext, launcher):
                launcher = None
            done = launcher is not None and child_state.launcher_done(launcher)
            held_for = self._holds.remaining(uid, generation, clock)
            if held_for is not None:
                return Step(launcher, self._cached_workers(job, done, suspended), held_for=held_for)
            if not done:
                waits_for = await self._shared_children(job, ext, now)
                refused = not await self._features.before_pods(job, ext, now)
                if not suspended and waits_for is None and not refused:
                    await self._features.before_workers(job, ext, launcher)
                    workers = await self._children.workers(job, ext)
                    rolled, launcher = await self._features.after_workers(job, ext, launcher, workers)
                held = waits_for is not None or rolled or renewing or refused
                may_create = not held and child_state.may_create_launcher(job, ext, workers, states)
                if launcher is None and may_create:
                    launcher = await self._children.create_launcher(job, ext)
                    self._features.launcher_created(job, ext, launcher)
                elif launcher is None:
                    log.debug(
                        "waiting for workers to be ready", job=f"{meta.get('namespace')}/{meta['name']}"
                    )
            if launcher is not None:
                launcher = await self._children.sync_launcher_suspension(
                    job,
                    ext,
                    launcher,
                    suspended,
                    may_resume=child_state.may_create_launcher(job, ext, workers, states),
                )
        except ChildRejected as rejection:
            held_for = self._holds.hold(uid, generation, clock)
            log.info(
                "child refused; job held", job=meta["name"], reason=rejection.reason, error=str(rejection)
            )
            made = workers or self._cached_workers(job, done, suspended)  # the cache may lag this sync's
            return Step(launcher, made, rejection, held_for)
        self._holds.release(uid)
        return Step(launcher, workers, recheck_after=waits_for)

    async def _shared_children(self, job: Obj, ext: Extensions, now: dt.datetime) -> float | None:
        """The Service, ConfigMap and what the features add beside them (the SSH Secret); a feature's wait
        (seconds) when one waits (for the user's own Secret, say).

        A new job's three are created together: none needs another, and its first sync then waits one
        round trip for them instead of three (decisions-local L21). Once any of them exists they are seen
        to one after another, as upstream does, so an object in the way that is not ours stops the sync before
        the next is touched. A failure among the three made together is raised as upstream would have
        met it first."""
        if not self._children.none_shared_cached(job):
            await self._children.service(job)
            await self._children.config_map(job, ext)
            return await self._features.with_shared_children(job, ext, now)
        outcomes = await asyncio.gather(
            self._children.service(job),
            self._children.config_map(job, ext),
            self._features.with_shared_children(job, ext, now),
            return_exceptions=True,
        )
        for outcome in outcomes:
            if isinstance(outcome, BaseException):
                raise outcome
        wait = outcomes[2]
        return wait if isinstance(wait, float) else None

    def _cached_workers(self, job: Obj, done: bool, suspended: bool) -> list[Obj]:
        """The workers upstream's status step counts when none were made this sync: none when the launcher
        is done or the job suspended (as upstream), else those the cache has."""
        if done or suspended:
            return []
        return self._children.present_workers(job)

    def observed_workers(self, job: Obj, step: Step, suspended: bool) -> list[Obj]:
        """The workers to say what is wrong with: those of this sync, else the cache's (a done launcher)."""
        if suspended:
            return []
        return step.workers or self._children.present_workers(job)
