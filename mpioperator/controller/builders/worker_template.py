"""A digest of the worker template, stamped on worker pods of jobs that roll workers (issue 18).

A label rather than an annotation: the pod cache keeps labels and drops annotations (decisions-local L5).
"""

from __future__ import annotations

import hashlib
import json

from mpioperator.api import accessors, conveniences
from mpioperator.api import constants as api
from mpioperator.api.objects import Obj

TEMPLATE_HASH = f"{conveniences.PREFIX}worker-template-hash"


def template_hash(job: Obj) -> str:
    template = (accessors.replica_spec(job, api.WORKER) or {}).get("template") or {}
    canonical = json.dumps(template, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(canonical.encode()).hexdigest()[:16]


def stamp(job: Obj, pod: Obj) -> None:
    """Only for jobs that opted in, so everyone else's worker pods stay exactly upstream's."""
    if conveniences.roll_workers(job):
        metadata = pod["metadata"]
        metadata["labels"] = {**(metadata.get("labels") or {}), TEMPLATE_HASH: template_hash(job)}


def stamped_hash(pod: Obj) -> str | None:
    found = ((pod.get("metadata") or {}).get("labels") or {}).get(TEMPLATE_HASH)
    return None if found is None else str(found)
