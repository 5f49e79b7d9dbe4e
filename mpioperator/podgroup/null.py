"""Gang scheduling off: no PodGroup, pods keep their own scheduler."""

from __future__ import annotations

from mpioperator.api.objects import Obj
from mpioperator.kube.resources import Resource
from mpioperator.podgroup.maths import PriorityLookup


class NullBackend:
    @property
    def name(self) -> str:
        return ""

    @property
    def enabled(self) -> bool:
        return False

    @property
    def resource(self) -> Resource | None:
        return None

    @property
    def scheduler_name(self) -> str:
        return ""

    @property
    def updates_pod_group(self) -> bool:
        return False

    def new_pod_group(
        self, job: Obj, priority_of: PriorityLookup | None, *, launcher_in_gang: bool = True
    ) -> Obj:
        raise RuntimeError("gang scheduling is off: there is no PodGroup to build")

    def prerequisite(self, job: Obj, pod_group: Obj) -> tuple[Resource, Obj] | None:
        return None

    def decorate_pod_template(self, template: Obj, job: Obj) -> None:
        """Pods are left exactly as the user wrote them."""

    def pod_group_spec_equal(self, a: Obj, b: Obj) -> bool:
        return True
