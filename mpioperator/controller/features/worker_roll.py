"""mpioperator.io/roll-workers: edits reaching the pods (decisions-local L14, docs/extensions.md)."""

from __future__ import annotations

from mpioperator.api.objects import Obj
from mpioperator.controller.feature import Feature, FeaturePorts, Seen
from mpioperator.controller.worker_roll import Rolls


class WorkerRollFeature(Feature):
    def __init__(self, ports: FeaturePorts) -> None:
        # Every feature is told before a rolled worker is deleted (the exec agent's Role lets go of it).
        self._rolls = Rolls(ports.listers, ports.writer, ports.recorder, ports.before_delete)

    async def after_workers(
        self, job: Obj, launcher: Obj | None, workers: list[Obj]
    ) -> tuple[bool, Obj | None]:
        return await self._rolls.before_start(job, launcher, workers)

    def describe(self, job: Obj, status: Obj, seen: Seen) -> None:
        self._rolls.report(job, status, seen.launcher, seen.launcher_pods, seen.workers, seen.now)
