"""mpioperator.io/restart-policy: a whole-job restart (docs/extensions.md)."""

from __future__ import annotations

import datetime as dt

from mpioperator.api import restarts
from mpioperator.api.objects import Obj
from mpioperator.controller.feature import Feature, FeaturePorts, Stop
from mpioperator.controller.restarts import Restarter

# While an earlier attempt's children go, the job is looked at again this often (their delete events
# enqueue it too; this covers a launcher pod whose Job is gone, which enqueues nothing).
RESTART_RECHECK_SECONDS = 2.0


class RestartsFeature(Feature):
    def __init__(self, ports: FeaturePorts) -> None:
        self._restarter = Restarter(
            ports.listers, ports.writer, ports.recorder, ports.children, ports.write_status
        )

    async def before_children(self, cached: Obj, job: Obj, now: dt.datetime, suspended: bool) -> Stop | None:
        """Nothing of a new attempt is made while anything of an earlier one is left."""
        if not restarts.labelled(job):
            return None
        failure = None if suspended else self._restarter.failure(job) or self._restarter.edited(job)
        if failure is not None:
            await self._restarter.restart(cached, job, failure, now)
            return Stop(RESTART_RECHECK_SECONDS, new_attempt=True)
        if await self._restarter.clear_earlier(job):
            return Stop(RESTART_RECHECK_SECONDS)
        if not suspended and (left := self._restarter.waiting(job, now)) is not None:
            return Stop(left)  # the restart's back-off (status.nextAttemptTime)
        return None

    def failure_detail(self, job: Obj, detail: str) -> str:
        return self._restarter.note_exhausted(job, detail)

    def amend_status(self, status: Obj, now: dt.datetime) -> None:
        self._restarter.settle(status, now)
