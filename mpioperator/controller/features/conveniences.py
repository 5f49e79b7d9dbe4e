"""The conveniences: debug mode, the user's own SSH Secret, a resumed launcher (docs/extensions.md)."""

from __future__ import annotations

import datetime as dt

from mpioperator.api.objects import Obj
from mpioperator.controller.conveniences import SECRET_RECHECK_SECONDS, Conveniences
from mpioperator.controller.feature import ChildOperations, Feature, FeaturePorts, Seen


class ConveniencesFeature(Feature):
    def __init__(self, ports: FeaturePorts) -> None:
        self._conveniences = Conveniences(ports.listers, ports.writer, ports.recorder)
        self._children: ChildOperations = ports.children

    async def with_launcher(self, job: Obj, launcher: Obj | None) -> bool:
        await self._conveniences.end_debug_mode(job, launcher)
        return await self._conveniences.renew_launcher_for_resume(job, launcher)

    async def with_shared_children(self, job: Obj, now: dt.datetime) -> float | None:
        waits = await self._conveniences.ssh_secret(job, job["status"], now, self._children)
        return SECRET_RECHECK_SECONDS if waits else None

    def launcher_created(self, job: Obj, launcher: Obj) -> None:
        self._conveniences.launcher_created(job, launcher)

    def describe(self, job: Obj, status: Obj, seen: Seen) -> None:
        self._conveniences.debug_status(job, status, seen.launcher, seen.now)
