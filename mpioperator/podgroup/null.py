"""Gang scheduling off: no PodGroup, pods keep their own scheduler."""

from __future__ import annotations

from mpioperator.api.objects import Obj
from mpioperator.podgroup.backend import Traits, WithTraits
from mpioperator.podgroup.maths import PriorityLookup


class NullBackend(WithTraits):
    traits = Traits(name="", resource=None, updates_pod_group=False)

    def new_pod_group(
        self, job: Obj, priority_of: PriorityLookup | None, *, launcher_in_gang: bool = True
    ) -> Obj:
        raise RuntimeError("gang scheduling is off: there is no PodGroup to build")

    def decorate_pod_template(self, template: Obj, job: Obj) -> None:
        """Pods are left exactly as the user wrote them."""

    def pod_group_spec_equal(self, a: Obj, b: Obj) -> bool:
        return True
