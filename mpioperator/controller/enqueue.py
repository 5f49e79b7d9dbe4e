"""Which MPIJob a change to a child object concerns (upstream's handleObject, as pure functions)."""

from __future__ import annotations

from collections.abc import Callable

from mpioperator.api import constants as api
from mpioperator.api.objects import Obj
from mpioperator.cache.keys import make_key


def controller_ref(obj: Obj) -> Obj | None:
    for ref in obj.get("metadata", {}).get("ownerReferences") or ():
        if ref.get("controller"):
            return dict(ref)
    return None


def _group(api_version: str) -> str:
    return api_version.rpartition("/")[0]


def _version(api_version: str) -> str:
    return api_version.rpartition("/")[2]


def owning_mpijob_key(obj: Obj, get_job: Callable[[str, str], Obj | None]) -> str | None:
    """The `<ns>/<name>` of the MPIJob controlling `obj`, directly or through its launcher Job.

    `get_job(namespace, name)` reads the batch Job cache; a launcher pod's owner is its Job, whose own
    controller is the MPIJob. Objects controlled by anything else yield None.
    """
    ref = controller_ref(obj)
    if ref is None:
        return None
    namespace = obj.get("metadata", {}).get("namespace", "")
    api_version = str(ref.get("apiVersion", ""))
    if _group(api_version) == "batch" and ref.get("kind") == "Job":
        job = get_job(namespace, str(ref.get("name", "")))
        if job is None:
            return None
        ref = controller_ref(job)
        if ref is None:
            return None
        api_version = str(ref.get("apiVersion", ""))
    if (
        ref.get("kind") != api.KIND
        or _group(api_version) != api.GROUP
        or _version(api_version) != api.VERSION
    ):
        return None
    return make_key(namespace, str(ref.get("name", "")))


def spec_changed(old: Obj, new: Obj) -> bool:
    """Whether an MPIJob update changed its spec: the API server bumps metadata.generation for spec
    changes only, since status has its own subresource."""
    old_generation = old.get("metadata", {}).get("generation")
    return bool(old_generation != new.get("metadata", {}).get("generation"))


def launcher_pod_ended(pod: Obj) -> bool:
    """A pod controlled by a batch Job (so a launcher's, for our jobs) that has finished.

    Its Job's own status follows within the Job controller's batch period of about a second, and the
    MPIJob's status changes again then, so a sync in between would cost a status write of its own.
    """
    ref = controller_ref(pod)
    return (
        ref is not None
        and ref.get("kind") == "Job"
        and _group(str(ref.get("apiVersion", ""))) == "batch"
        and (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed")
    )
