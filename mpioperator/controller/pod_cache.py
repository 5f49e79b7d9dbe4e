"""What the pod cache keeps of each pod: only the fields the controller reads.

Upstream caches whole pods; a pod's spec and status are most of its size and none of the spec is read here,
so with thousands of pods cached the slim copy is what keeps the operator's memory below upstream's.
Label keys and the values that repeat across pods are interned, so 9,000 pods share one copy of each.
The same fields are the pod informer's projection, so the rest of a pod is skipped while it is parsed, from
protobuf (as the API server sends pods when asked) or from JSON.
"""

from __future__ import annotations

import sys
from typing import Any

from mpioperator.api.objects import Obj
from mpioperator.kube.projection import KEEP, FieldSpec, Projection
from mpioperator.kube.protoschema import POD

# metadata fields read by listers, indexers, ownership checks, cleanup and event handlers.
_METADATA = (
    "name",
    "namespace",
    "uid",
    "resourceVersion",
    "creationTimestamp",
    "deletionTimestamp",
    "ownerReferences",
)
# status fields read by compute_status and the launcher failure message (phase is kept interned).
_STATUS_TEXT = ("reason", "message")
_CONDITION = ("type", "status")

POD_FIELDS: FieldSpec = {
    "metadata": {**dict.fromkeys(_METADATA, KEEP), "labels": KEEP},
    "status": {
        **dict.fromkeys(_STATUS_TEXT, KEEP),
        "phase": KEEP,
        "conditions": [dict.fromkeys(_CONDITION, KEEP)],
    },
}
POD_PROJECTION = Projection(POD_FIELDS, "Pod", message=POD)


def _interned(values: dict[str, Any]) -> dict[str, Any]:
    return {sys.intern(k): sys.intern(v) if isinstance(v, str) else v for k, v in values.items()}


def _slim_condition(condition: Obj) -> Obj:
    return {k: sys.intern(condition[k]) for k in _CONDITION if isinstance(condition.get(k), str)}


def slim_pod(pod: Obj) -> Obj:
    """A copy of `pod` with the fields the controller reads and nothing else."""
    meta = pod.get("metadata") or {}
    slim_meta: Obj = {k: meta[k] for k in _METADATA if k in meta}
    if meta.get("labels"):
        slim_meta["labels"] = _interned(meta["labels"])
    if "ownerReferences" in slim_meta:
        slim_meta["ownerReferences"] = [_interned(ref) for ref in slim_meta["ownerReferences"]]
    slim: Obj = {"apiVersion": "v1", "kind": "Pod", "metadata": slim_meta}
    status = pod.get("status") or {}
    slim_status: Obj = {k: status[k] for k in _STATUS_TEXT if k in status}
    if isinstance(status.get("phase"), str):
        slim_status["phase"] = sys.intern(status["phase"])
    if status.get("conditions"):
        slim_status["conditions"] = [_slim_condition(c) for c in status["conditions"]]
    slim["status"] = slim_status
    return slim
