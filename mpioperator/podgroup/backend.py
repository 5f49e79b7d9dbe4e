"""The seam between the controller and a gang scheduler's PodGroup, pure parts only.

A backend renders the desired PodGroup, decorates pod templates and compares specs; the
controller does the API calls, using `resource` to address the objects. What a backend is (its name,
resource, scheduler and whether its PodGroups may be updated) is one constant `Traits` value.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

from mpioperator.api.objects import Obj
from mpioperator.kube.resources import Resource
from mpioperator.podgroup.maths import PriorityLookup


@dataclass(frozen=True, slots=True)
class Traits:
    """What a backend is, fixed for its life."""

    # The --gang-scheduling value that selects the backend; "" when off.
    name: str
    # The PodGroup API resource; None when gang scheduling is off.
    resource: Resource | None
    # The pod schedulerName the backend forces; "" when it leaves pods alone.
    scheduler_name: str = ""
    # Whether a PodGroup whose spec drifted is updated; False where the API makes it immutable.
    updates_pod_group: bool = True


class PodGroupBackend(Protocol):
    @property
    def name(self) -> str:
        """The --gang-scheduling value that selects this backend; "" when off."""

    @property
    def enabled(self) -> bool: ...

    @property
    def resource(self) -> Resource | None:
        """The PodGroup API resource; None when gang scheduling is off."""

    @property
    def scheduler_name(self) -> str:
        """The pod schedulerName this backend forces; "" when it leaves pods alone."""

    @property
    def updates_pod_group(self) -> bool:
        """Whether a PodGroup whose spec drifted is updated; False where the API makes it immutable."""

    def new_pod_group(
        self, job: Obj, priority_of: PriorityLookup | None, *, launcher_in_gang: bool = True
    ) -> Obj:
        """The desired PodGroup for a defaulted MPIJob; `launcher_in_gang` is maths.launcher_in_gang."""

    def prerequisite(self, job: Obj, pod_group: Obj) -> tuple[Resource, Obj] | None:
        """An object that must exist before `pod_group` can be created (its resource and desired
        state), also owned by the job; None when the PodGroup stands alone."""

    def decorate_pod_template(self, template: Obj, job: Obj) -> None:
        """Point a pod (template) at the scheduler and its group, in place."""

    def pod_group_spec_equal(self, a: Obj, b: Obj) -> bool:
        """Whether two PodGroups' specs are semantically equal (no update needed)."""


def decorator_for(backend: PodGroupBackend, job: Obj) -> Callable[[Obj], None] | None:
    """The builders' pod decorator for `job`, or None when gang scheduling is off."""
    if not backend.enabled:
        return None
    return functools.partial(backend.decorate_pod_template, job=job)


class WithTraits:
    """The members of PodGroupBackend that are alike in every backend: those its `traits` decide (set once,
    as a class attribute or in the constructor), and no prerequisite unless the backend has one."""

    traits: Traits

    @property
    def name(self) -> str:
        return self.traits.name

    @property
    def enabled(self) -> bool:
        return self.traits.resource is not None

    @property
    def resource(self) -> Resource | None:
        return self.traits.resource

    @property
    def scheduler_name(self) -> str:
        return self.traits.scheduler_name

    @property
    def updates_pod_group(self) -> bool:
        return self.traits.updates_pod_group

    def prerequisite(self, job: Obj, pod_group: Obj) -> tuple[Resource, Obj] | None:
        return None
