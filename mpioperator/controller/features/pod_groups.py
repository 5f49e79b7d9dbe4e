"""Gang scheduling: the job's PodGroup before its workers, deleted on cleanup (docs/extensions.md)."""

from __future__ import annotations

from mpioperator.api.objects import Obj
from mpioperator.controller.feature import Feature, FeaturePorts
from mpioperator.controller.pod_groups import PodGroupReconciler


class PodGroupsFeature(Feature):
    def __init__(self, ports: FeaturePorts) -> None:
        listers = ports.listers
        self._pod_groups = PodGroupReconciler(
            ports.backend, listers.pod_groups, listers.priority_classes, ports.writer, ports.recorder
        )

    async def before_workers(self, job: Obj, launcher: Obj | None) -> None:
        if self._pod_groups.enabled:
            # Before the workers, so their scheduler finds the gang already defined.
            # A suspended launcher Job (a resume under WaitForWorkersReady) has no pod yet.
            running = launcher is not None and not launcher.get("spec", {}).get("suspend")
            await self._pod_groups.get_or_create(job, launcher_exists=running)

    async def after_clean_up(self, job: Obj) -> None:
        await self._pod_groups.delete(job)
