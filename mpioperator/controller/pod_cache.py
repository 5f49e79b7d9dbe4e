"""What the pod cache keeps of each pod: only the fields the controller reads.

Upstream caches whole pods; a pod's spec and status are most of its size and of the spec only the node the
pod is bound to is read here (to name the node of a lost or evicted worker), so with thousands of pods
cached the slim copy is what keeps the operator's memory below upstream's. Node names are interned: a
cluster has far fewer nodes than pods.
Label keys and the values that repeat across pods are interned, so 9,000 pods share one copy of each.
The same fields are the pod informer's projection, so the rest of a pod is skipped while it is parsed, from
protobuf (as the API server sends pods when asked) or from JSON.

Of the container statuses only what tells a user something is wrong is kept (controller/problems.py): a
waiting reason that means the pod is stuck, a bad end (OOM-killed, a non-zero exit code) with the tail of
its message, the restart count, and the start of a container running again after a bad end. A healthy
container keeps nothing, so a running job's pods cost what they did before.
"""

from __future__ import annotations

import sys
from typing import Any

from mpioperator.api.objects import Obj
from mpioperator.controller.cached_metadata import CACHED_METADATA
from mpioperator.controller.problems import STUCK_REASONS
from mpioperator.kube.projection import KEEP, FieldSpec, Projection
from mpioperator.kube.protoschema import POD
from mpioperator.kube.protoupb import string, time_of

# Pod conditions whose reason and message are kept: why a pod could not be placed, and why it is going.
_PLACED, _DISRUPTED = "PodScheduled", "DisruptionTarget"

# status fields read by compute_status and the launcher failure message (phase is kept interned).
_STATUS_TEXT = ("reason", "message")
_CONDITION = ("type", "status")
_TERMINATED: FieldSpec = dict.fromkeys(("reason", "exitCode", "message"), KEEP)
_CONTAINER: FieldSpec = {
    "restartCount": KEEP,
    "state": {
        "waiting": {"reason": KEEP, "message": KEEP},
        "running": {"startedAt": KEEP},
        "terminated": _TERMINATED,
    },
    "lastState": {"terminated": _TERMINATED},
}
_MESSAGE_BYTES = 1024
_STUCK = frozenset(STUCK_REASONS)

POD_FIELDS: FieldSpec = {
    "metadata": {**dict.fromkeys(CACHED_METADATA, KEEP), "labels": KEEP},
    "spec": {"nodeName": KEEP},
    "status": {
        **dict.fromkeys(_STATUS_TEXT, KEEP),
        "phase": KEEP,
        "podIP": KEEP,  # for a job whose hostfile lists pod IPs
        # reason and message: kept only for a pod the scheduler could not place or one being disrupted
        "conditions": [dict.fromkeys((*_CONDITION, "reason", "message"), KEEP)],
        "containerStatuses": [_CONTAINER],
        "initContainerStatuses": [_CONTAINER],
    },
}


def _interned(values: dict[str, Any]) -> dict[str, Any]:
    return {sys.intern(k): sys.intern(v) if isinstance(v, str) else v for k, v in values.items()}


def _explained(cond_type: object, status: object) -> bool:
    """Whether a condition's reason and message are kept: a pod not placed, or one marked for disruption."""
    return (cond_type == _PLACED and status == "False") or (cond_type == _DISRUPTED and status == "True")


# The conditions the kubelet and scheduler set on every pod keep only their type and status, so all pods
# share one copy of each pair: four or five dicts fewer a pod. A cached pod is never changed in place (the
# store replaces it whole), which is what makes sharing safe. Custom readiness-gate types are not shared, so
# this table cannot grow with what users write.
_SHARED_CONDITIONS: dict[tuple[str, str], Obj] = {
    (cond_type, status): {"type": sys.intern(cond_type), "status": sys.intern(status)}
    for cond_type in (_PLACED, "PodReadyToStartContainers", "Initialized", "ContainersReady", "Ready")
    for status in ("True", "False", "Unknown")
    if not _explained(cond_type, status)
}


def _shared_condition(cond_type: object, status: object) -> Obj | None:
    if isinstance(cond_type, str) and isinstance(status, str):
        return _SHARED_CONDITIONS.get((cond_type, status))
    return None


def _slim_condition(condition: Obj) -> Obj:
    shared = _shared_condition(condition.get("type"), condition.get("status"))
    if shared is not None:
        return shared
    slim = {k: sys.intern(condition[k]) for k in _CONDITION if isinstance(condition.get(k), str)}
    if _explained(condition.get("type"), condition.get("status")):
        if isinstance(condition.get("reason"), str):
            slim["reason"] = sys.intern(condition["reason"])
        if isinstance(condition.get("message"), str):
            slim["message"] = _bounded(condition["message"])
    return slim


def _bounded(text: str, *, keep_end: bool = False) -> str:
    raw = text.encode()
    if len(raw) <= _MESSAGE_BYTES:
        return text
    cut = raw[-_MESSAGE_BYTES:] if keep_end else raw[:_MESSAGE_BYTES]
    return cut.decode(errors="ignore")


def _bad_end(terminated: Any) -> Obj | None:
    if not isinstance(terminated, dict):
        return None
    code = terminated.get("exitCode")
    if terminated.get("reason") != "OOMKilled" and not (isinstance(code, int) and code != 0):
        return None
    slim: Obj = {"exitCode": code if isinstance(code, int) else 0}
    if isinstance(terminated.get("reason"), str):
        slim["reason"] = sys.intern(terminated["reason"])
    if terminated.get("message"):
        slim["message"] = _bounded(str(terminated["message"]), keep_end=True)
    return slim


def _slim_container(container: Obj) -> Obj:
    """What problems.py reads of one container status; empty for a healthy container."""
    slim: Obj = {}
    restarts = container.get("restartCount")
    if isinstance(restarts, int) and restarts:
        slim["restartCount"] = restarts
    state = container.get("state") or {}
    last = _bad_end((container.get("lastState") or {}).get("terminated"))
    waiting = state.get("waiting") or {}
    ended = _bad_end(state.get("terminated"))
    if waiting.get("reason") in _STUCK:
        slim["state"] = {
            "waiting": {
                "reason": sys.intern(waiting["reason"]),
                "message": _bounded(str(waiting.get("message") or "")),
            }
        }
    elif ended is not None:
        slim["state"] = {"terminated": ended}
    elif last is not None and isinstance(state.get("running"), dict):
        slim["state"] = {"running": {"startedAt": state["running"].get("startedAt")}}
    if last is not None:
        slim["lastState"] = {"terminated": last}
    return slim


def _slim_containers(statuses: Any) -> list[Obj]:
    slim = [_slim_container(c) for c in statuses or () if isinstance(c, dict)]
    return [c for c in slim if c]


def slim_pod(pod: Obj) -> Obj:
    """A copy of `pod` with the fields the controller reads and nothing else."""
    meta = pod.get("metadata") or {}
    slim_meta: Obj = {k: meta[k] for k in CACHED_METADATA if k in meta}
    if meta.get("labels"):
        slim_meta["labels"] = _interned(meta["labels"])
    if "ownerReferences" in slim_meta:
        slim_meta["ownerReferences"] = [_interned(ref) for ref in slim_meta["ownerReferences"]]
    slim: Obj = {"apiVersion": "v1", "kind": "Pod", "metadata": slim_meta}
    node = (pod.get("spec") or {}).get("nodeName")
    if isinstance(node, str) and node:
        slim["spec"] = {"nodeName": sys.intern(node)}
    status = pod.get("status") or {}
    slim_status: Obj = {k: status[k] for k in _STATUS_TEXT if k in status}
    if isinstance(status.get("phase"), str):
        slim_status["phase"] = sys.intern(status["phase"])
    if isinstance(status.get("podIP"), str) and status["podIP"]:
        slim_status["podIP"] = status["podIP"]
    if status.get("conditions"):
        slim_status["conditions"] = [_slim_condition(c) for c in status["conditions"]]
    for key in ("containerStatuses", "initContainerStatuses"):
        containers = _slim_containers(status.get(key))
        if containers:
            slim_status[key] = containers
    slim["status"] = slim_status
    return slim


# The slim pod straight from a protobuf Pod (upb, kube/protoupb.py), equal to slim_pod of its projection.
# A healthy pod never builds its projection: its container statuses are checked for anything to keep
# first, and only a container with something to report goes through _slim_container. upb hands back a
# string that is not UTF-8 as bytes, which JSON shows with U+FFFD (`string`). The strings every pod has are
# read on a fast path that takes them as str: sys.intern refuses bytes with a TypeError, and only then is
# the same part read again through `string`; the few others go through `string` directly.


def slim_pod_message(pod: Any) -> Obj:
    """slim_pod(the JSON projection of `pod`), read from a protobuf Pod message."""
    meta = pod.metadata
    slim_meta: Obj = {}
    for key in ("name", "namespace", "uid", "resourceVersion"):
        value = getattr(meta, key)
        if value:
            slim_meta[key] = value if value.__class__ is str else string(value)
    if meta.HasField("creationTimestamp"):
        created = time_of(meta.creationTimestamp)
        if created is not None:
            slim_meta["creationTimestamp"] = created
    if meta.HasField("deletionTimestamp"):
        slim_meta["deletionTimestamp"] = time_of(meta.deletionTimestamp)
    if meta.ownerReferences:
        slim_meta["ownerReferences"] = [_owner_reference(ref) for ref in meta.ownerReferences]
    if meta.labels:
        try:
            slim_meta["labels"] = {sys.intern(pair.key): sys.intern(pair.value) for pair in meta.labels}
        except TypeError:
            slim_meta["labels"] = {
                _interned_string(pair.key): _interned_string(pair.value) for pair in meta.labels
            }
    slim: Obj = {"apiVersion": "v1", "kind": "Pod", "metadata": slim_meta}
    if pod.spec.nodeName:
        slim["spec"] = {"nodeName": _interned_string(pod.spec.nodeName)}
    status = pod.status
    slim_status: Obj = {}
    if status.reason:
        slim_status["reason"] = string(status.reason)
    if status.message:
        slim_status["message"] = string(status.message)
    if status.phase:
        slim_status["phase"] = _interned_string(status.phase)
    if status.podIP:
        slim_status["podIP"] = string(status.podIP)
    if status.conditions:
        slim_status["conditions"] = [_condition_message(c) for c in status.conditions]
    for key in ("containerStatuses", "initContainerStatuses"):
        containers = [
            slim for slim in (_container_message(c) for c in getattr(status, key)) if slim is not None
        ]
        if containers:
            slim_status[key] = containers
    slim["status"] = slim_status
    return slim


_OWNER_TEXT = tuple(sys.intern(k) for k in ("apiVersion", "kind", "name", "uid"))


def _interned_string(value: str | bytes) -> str:
    return sys.intern(string(value))


def _owner_reference(ref: Any) -> Obj:
    try:
        slim: Obj = {k: sys.intern(getattr(ref, k)) for k in _OWNER_TEXT}
    except TypeError:
        slim = {k: _interned_string(getattr(ref, k)) for k in _OWNER_TEXT}
    for key in ("controller", "blockOwnerDeletion"):
        if ref.HasField(key):
            slim[key] = getattr(ref, key)
    return slim


def _condition_message(condition: Any) -> Obj:
    shared = _shared_condition(condition.type, condition.status)
    if shared is not None:
        return shared
    try:
        slim = {"type": sys.intern(condition.type), "status": sys.intern(condition.status)}
    except TypeError:
        slim = {"type": _interned_string(condition.type), "status": _interned_string(condition.status)}
    if _explained(slim["type"], slim["status"]):
        if condition.reason:
            slim["reason"] = _interned_string(condition.reason)
        if condition.message:
            slim["message"] = _bounded(string(condition.message))
    return slim


def _container_message(container: Any) -> Obj | None:
    state, last = container.state, container.lastState
    if not (
        container.restartCount
        or state.HasField("waiting")
        or state.HasField("terminated")
        or last.HasField("terminated")
    ):
        return None  # healthy: _slim_container keeps nothing
    ended_before = {"terminated": _terminated_message(last.terminated)} if last.HasField("terminated") else {}
    projected: Obj = {
        "restartCount": container.restartCount,
        "state": _state_message(state),
        "lastState": ended_before,
    }
    return _slim_container(projected) or None


def _state_message(state: Any) -> Obj:
    out: Obj = {}
    if state.HasField("waiting"):
        waiting = state.waiting
        out["waiting"] = {
            k: string(getattr(waiting, k)) for k in ("reason", "message") if getattr(waiting, k)
        }
    if state.HasField("running"):
        out["running"] = {"startedAt": time_of(state.running.startedAt)}
    if state.HasField("terminated"):
        out["terminated"] = _terminated_message(state.terminated)
    return out


def _terminated_message(terminated: Any) -> Obj:
    out: Obj = {"exitCode": terminated.exitCode}
    for key in ("reason", "message"):
        if getattr(terminated, key):
            out[key] = string(getattr(terminated, key))
    return out


POD_CACHE_PROJECTION = Projection(
    POD_FIELDS, "CachedPod", message=POD, finish=slim_pod, from_message=slim_pod_message
)
"""The pod informer's projection: slim pods out of both encodings, so the informer needs no transform."""
