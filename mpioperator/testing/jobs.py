"""Reads and waits on one MPIJob and its children, for tests and the demo."""

from __future__ import annotations

from typing import Any, Self

from mpioperator.testing.cluster import LocalCluster
from mpioperator.testing.wait import wait_for

TIMEOUT = 120.0
# Where the kinds of an MPIJob's children are listed: (API root, plural).
CHILD_KINDS = (
    ("/api/v1", "services"),
    ("/api/v1", "configmaps"),
    ("/api/v1", "secrets"),
    ("/apis/batch/v1", "jobs"),
    ("/api/v1", "pods"),
)


class Job:
    """Reads of one MPIJob and its children through the admin REST client."""

    def __init__(self, cluster: LocalCluster, namespace: str, name: str) -> None:
        self.cluster = cluster
        self.ns = namespace
        self.name = name

    @property
    def path(self) -> str:
        return f"/apis/kubeflow.org/v2beta1/namespaces/{self.ns}/mpijobs/{self.name}"

    def submit(self, body: dict[str, Any]) -> Self:
        self.cluster.rest.create(f"/apis/kubeflow.org/v2beta1/namespaces/{self.ns}/mpijobs", body)
        return self

    def get(self) -> dict[str, Any] | None:
        return self.cluster.rest.get_or_none(self.path)

    def condition(self, cond_type: str) -> dict[str, Any] | None:
        for cond in ((self.get() or {}).get("status") or {}).get("conditions") or ():
            if cond["type"] == cond_type and cond["status"] == "True":
                return dict(cond)
        return None

    def pods(self, role: str | None = None) -> list[dict[str, Any]]:
        selector = f"training.kubeflow.org/job-name={self.name}"
        if role:
            selector += f",training.kubeflow.org/job-role={role}"
        items: list[dict[str, Any]] = self.cluster.rest.get(
            f"/api/v1/namespaces/{self.ns}/pods?labelSelector={selector}"
        )["items"]
        return [p for p in items if not p["metadata"].get("deletionTimestamp")]

    def launcher(self) -> dict[str, Any] | None:
        return self.cluster.rest.get_or_none(f"/apis/batch/v1/namespaces/{self.ns}/jobs/{self.name}-launcher")

    def wait_condition(self, cond_type: str, timeout: float = TIMEOUT) -> dict[str, Any]:
        found = wait_for(lambda: self.condition(cond_type), timeout=timeout, what=f"{self.name} {cond_type}")
        assert found is not None
        return found

    def patch(self, body: dict[str, Any]) -> None:
        self.cluster.rest.merge_patch(self.path, body)
