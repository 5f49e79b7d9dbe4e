"""Controller owner references: what makes a child ours, and garbage-collected with its MPIJob."""

from __future__ import annotations

from mpioperator.api import constants as api
from mpioperator.api.objects import Obj


def controller_ref(job: Obj) -> Obj:
    return {
        "apiVersion": api.API_VERSION,
        "kind": api.KIND,
        "name": job["metadata"]["name"],
        "uid": job["metadata"].get("uid", ""),
        "controller": True,
        "blockOwnerDeletion": True,
    }


def is_controlled_by(obj: Obj, job: Obj) -> bool:
    uid = job["metadata"].get("uid")
    for ref in obj.get("metadata", {}).get("ownerReferences") or ():
        if ref.get("controller"):
            return bool(uid) and ref.get("uid") == uid
    return False


def child_metadata(job: Obj, name: str) -> Obj:
    """Metadata of the Service, ConfigMap, Secret and launcher Job: name, `app` label, owner."""
    return {
        "name": name,
        "namespace": job["metadata"].get("namespace", ""),
        "labels": {"app": job["metadata"]["name"]},
        "ownerReferences": [controller_ref(job)],
    }
