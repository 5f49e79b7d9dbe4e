"""Digests of the worker and launcher templates, stamped on the children of jobs that roll on a template
change (`mpioperator.io/roll-workers-on-template-change`).

Labels rather than annotations: the pod cache keeps labels and drops annotations (decisions-local L5).
"""

from __future__ import annotations

import hashlib
import json

from mpioperator.api import accessors, annotation_keys
from mpioperator.api import constants as api
from mpioperator.api.extensions.parsed import Extensions
from mpioperator.api.objects import Obj

TEMPLATE_HASH = annotation_keys.WORKER_TEMPLATE_HASH
LAUNCHER_TEMPLATE_HASH = annotation_keys.LAUNCHER_TEMPLATE_HASH


def _digest(job: Obj, replica_type: str) -> str:
    template = (accessors.replica_spec(job, replica_type) or {}).get("template") or {}
    canonical = json.dumps(template, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(canonical.encode()).hexdigest()[:16]


def template_hash(job: Obj) -> str:
    return _digest(job, api.WORKER)


def launcher_template_hash(job: Obj) -> str:
    return _digest(job, api.LAUNCHER)


def _label(obj: Obj, key: str, value: str) -> None:
    metadata = obj["metadata"]
    metadata["labels"] = {**(metadata.get("labels") or {}), key: value}


def stamp(job: Obj, ext: Extensions, pod: Obj) -> None:
    """Only for jobs that opted in, so everyone else's worker pods stay exactly upstream's."""
    if ext.conveniences.roll_workers:
        _label(pod, TEMPLATE_HASH, template_hash(job))


def stamp_launcher(job: Obj, ext: Extensions, launcher: Obj) -> None:
    """On the launcher Job's own metadata (its pods need not carry it): only for jobs that opted in."""
    if ext.conveniences.roll_workers:
        _label(launcher, LAUNCHER_TEMPLATE_HASH, launcher_template_hash(job))


def _stamped(obj: Obj, key: str) -> str | None:
    found = ((obj.get("metadata") or {}).get("labels") or {}).get(key)
    return None if found is None else str(found)


def stamped_hash(pod: Obj) -> str | None:
    return _stamped(pod, TEMPLATE_HASH)


def stamped_launcher_hash(launcher: Obj) -> str | None:
    return _stamped(launcher, LAUNCHER_TEMPLATE_HASH)
