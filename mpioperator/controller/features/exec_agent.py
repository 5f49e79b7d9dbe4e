"""mpioperator.io/exec-agent: the launcher's RBAC and kubectl delivery (docs/extensions.md)."""

from __future__ import annotations

import datetime as dt

from mpioperator.api.objects import Obj
from mpioperator.controller.builders.podspec import Decorator
from mpioperator.controller.exec_agent import ExecAgent
from mpioperator.controller.feature import Feature, FeaturePorts


class ExecAgentFeature(Feature):
    def __init__(self, ports: FeaturePorts) -> None:
        self._agent = ExecAgent(ports.listers, ports.writer, ports.recorder, ports.exec_agent_image)

    async def guard(self, cached: Obj, job: Obj) -> Obj:
        return await self._agent.guard(cached, job)  # its finalizer on (or off) the job

    async def on_deleting(self, cached: Obj, job: Obj) -> None:
        await self._agent.release(cached, job)  # the grants revoked before the finalizer goes

    async def before_pods(self, job: Obj, now: dt.datetime) -> bool:
        return await self._agent.prepare(job, job["status"], now)

    async def after_workers(
        self, job: Obj, launcher: Obj | None, workers: list[Obj]
    ) -> tuple[bool, Obj | None]:
        await self._agent.grant(job, workers)
        return False, launcher

    def decorate_launcher(self, job: Obj, decorate: Decorator | None) -> Decorator | None:
        return self._agent.launcher_decorator(job, decorate)

    async def before_delete(self, job: Obj, pods: list[Obj]) -> None:
        await self._agent.withdraw(job, pods)

    async def follow(self, job: Obj, workers: list[Obj]) -> None:
        await self._agent.follow(job, workers)
