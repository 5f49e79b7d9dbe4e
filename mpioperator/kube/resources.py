"""Identities of the API resources the operator reads and writes."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from mpioperator.api.objects import Obj
from mpioperator.kube.errors import InvalidRequest

# What would end the path (a query, a fragment) if sent as it is, and its quoted form.
_QUOTED = {"?": "%3F", "#": "%23"}


def segment(what: str, value: str) -> str:
    """`value` (a name or a namespace) as one segment of a request path: `?` and `#` quoted, so no name
    adds a query such as `?dryRun=All`. What no quoting makes one segment is refused, as client-go does:
    empty, `.` and `..` (which a URL resolves into another path) and names holding `/` or `%` (which the
    API server decodes before it splits the path). Other characters are left to check_target."""
    if value in ("", ".", "..") or "/" in value or "%" in value:
        raise InvalidRequest(
            f"{what} {value[:200]!r} cannot be a path segment: it may not be empty, '.' or '..', nor hold"
            " '/' or '%'"
        )
    if "?" in value or "#" in value:
        for char, quoted in _QUOTED.items():
            value = value.replace(char, quoted)
    return value


@dataclass(frozen=True, slots=True)
class Resource:
    """Where a kind lives in the API: enough to build its URLs and to stamp list items."""

    group: str
    version: str
    plural: str
    kind: str
    namespaced: bool = True

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    def path(
        self, namespace: str | None = None, name: str | None = None, subresource: str | None = None
    ) -> str:
        """The request path, e.g. /apis/batch/v1/namespaces/ns/jobs/x/status."""
        root = f"/apis/{self.group}/{self.version}" if self.group else f"/api/{self.version}"
        parts = [root]
        if self.namespaced and namespace:
            parts.append(f"/namespaces/{segment('namespace', namespace)}")
        parts.append(f"/{self.plural}")
        if name is not None:
            parts.append(f"/{segment('name', name)}")
            if subresource:
                parts.append(f"/{subresource}")
        return "".join(parts)


PODS = Resource("", "v1", "pods", "Pod")
SERVICES = Resource("", "v1", "services", "Service")
CONFIG_MAPS = Resource("", "v1", "configmaps", "ConfigMap")
SECRETS = Resource("", "v1", "secrets", "Secret")
EVENTS = Resource("", "v1", "events", "Event")
NAMESPACES = Resource("", "v1", "namespaces", "Namespace", namespaced=False)
NODES = Resource("", "v1", "nodes", "Node", namespaced=False)
JOBS = Resource("batch", "v1", "jobs", "Job")
LEASES = Resource("coordination.k8s.io", "v1", "leases", "Lease")
PRIORITY_CLASSES = Resource("scheduling.k8s.io", "v1", "priorityclasses", "PriorityClass", namespaced=False)
CRDS = Resource(
    "apiextensions.k8s.io", "v1", "customresourcedefinitions", "CustomResourceDefinition", namespaced=False
)
MPIJOBS = Resource("kubeflow.org", "v2beta1", "mpijobs", "MPIJob")
# Asked once per right at start-up: may the operator itself do it (app/startup.py).
SELF_SUBJECT_ACCESS_REVIEWS = Resource(
    "authorization.k8s.io", "v1", "selfsubjectaccessreviews", "SelfSubjectAccessReview", namespaced=False
)
VOLCANO_POD_GROUPS = Resource("scheduling.volcano.sh", "v1beta1", "podgroups", "PodGroup")
SCHEDULER_PLUGINS_POD_GROUPS = Resource("scheduling.x-k8s.io", "v1alpha1", "podgroups", "PodGroup")
# Kubernetes' own Workload API (alpha in 1.36: the GenericWorkload and GangScheduling feature gates).
WORKLOADS = Resource("scheduling.k8s.io", "v1alpha2", "workloads", "Workload")
KUBERNETES_POD_GROUPS = Resource("scheduling.k8s.io", "v1alpha2", "podgroups", "PodGroup")


def stamp_kind(res: Resource) -> Callable[[Obj], None]:
    """A function giving an object its kind/apiVersion, which the API omits on list items."""

    def stamp(obj: Obj) -> None:
        obj.setdefault("kind", res.kind)
        obj.setdefault("apiVersion", res.api_version)

    return stamp


def stamp_list(res: Resource, listed: Obj) -> Obj:
    stamp = stamp_kind(res)
    for item in listed.get("items") or ():
        stamp(item)
    return listed
