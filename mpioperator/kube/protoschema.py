"""The protobuf messages of the Kubernetes API the operator reads, with their JSON names and rules.

Field numbers and types are those of k8s.io/api's core/v1 and k8s.io/apimachinery's meta/v1 and runtime
`generated.proto`. Only the fields the operator reads are listed: upb (`protoupb`, which makes message
classes of these) keeps every other field as unknown bytes that are never read. Each field also carries
what Go's JSON encoding does with its zero value, because a field the API server writes to protobuf even
when empty (a proto2 string) is left out of its JSON (`omitempty`), and what is read from either
encoding must come out the same (`protoupb.as_json`):

* `omitempty`: the zero value ("" / false / an empty list or map / the zero time) is left out;
* `pointer`: a Go pointer, shown whenever it is set, even to its zero value (a zero time as null);
* neither: always shown, the zero value included (a condition's `type`, an owner reference's `uid`, a
  time Go tags `omitempty` only, which JSON shows as null when zero).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

Kind = Literal["string", "bytes", "bool", "int64", "time", "message", "string_map"]


@dataclass(frozen=True, slots=True)
class Field:
    number: int
    name: str
    kind: Kind
    message: Message | None = None
    repeated: bool = False
    omitempty: bool = True
    pointer: bool = False


@dataclass(frozen=True, slots=True)
class Message:
    name: str
    fields: tuple[Field, ...]


def _always(number: int, name: str) -> Field:
    return Field(number, name, "string", omitempty=False)


OWNER_REFERENCE = Message(
    "OwnerReference",
    (
        _always(5, "apiVersion"),
        _always(1, "kind"),
        _always(3, "name"),
        _always(4, "uid"),
        Field(6, "controller", "bool", pointer=True),
        Field(7, "blockOwnerDeletion", "bool", pointer=True),
    ),
)

OBJECT_META = Message(
    "ObjectMeta",
    (
        Field(1, "name", "string"),
        Field(2, "generateName", "string"),
        Field(3, "namespace", "string"),
        Field(5, "uid", "string"),
        Field(6, "resourceVersion", "string"),
        Field(7, "generation", "int64"),
        Field(8, "creationTimestamp", "time"),  # omitzero: a zero time is left out, not null
        Field(9, "deletionTimestamp", "time", pointer=True),
        Field(10, "deletionGracePeriodSeconds", "int64", pointer=True),
        Field(11, "labels", "string_map"),
        Field(12, "annotations", "string_map"),
        Field(13, "ownerReferences", "message", OWNER_REFERENCE, repeated=True),
    ),
)

LIST_META = Message(
    "ListMeta",
    (
        Field(1, "selfLink", "string"),
        Field(2, "resourceVersion", "string"),
        Field(3, "continue", "string"),
        Field(4, "remainingItemCount", "int64", pointer=True),
    ),
    # shardInfo (5) is left out: it is only sent to clients that ask for a shard.
)

POD_CONDITION = Message(
    "PodCondition",
    (
        _always(1, "type"),
        Field(7, "observedGeneration", "int64"),
        _always(2, "status"),
        Field(3, "lastProbeTime", "time", omitempty=False),
        Field(4, "lastTransitionTime", "time", omitempty=False),
        Field(5, "reason", "string"),
        Field(6, "message", "string"),
    ),
)

CONTAINER_STATE_WAITING = Message(
    "ContainerStateWaiting", (Field(1, "reason", "string"), Field(2, "message", "string"))
)

CONTAINER_STATE_RUNNING = Message("ContainerStateRunning", (Field(1, "startedAt", "time", omitempty=False),))

CONTAINER_STATE_TERMINATED = Message(
    "ContainerStateTerminated",
    (
        Field(1, "exitCode", "int64", omitempty=False),
        Field(2, "signal", "int64"),
        Field(3, "reason", "string"),
        Field(4, "message", "string"),
        Field(5, "startedAt", "time", omitempty=False),
        Field(6, "finishedAt", "time", omitempty=False),
        Field(7, "containerID", "string"),
    ),
)

CONTAINER_STATE = Message(
    "ContainerState",
    (
        Field(1, "waiting", "message", CONTAINER_STATE_WAITING, pointer=True),
        Field(2, "running", "message", CONTAINER_STATE_RUNNING, pointer=True),
        Field(3, "terminated", "message", CONTAINER_STATE_TERMINATED, pointer=True),
    ),
)

CONTAINER_STATUS = Message(
    "ContainerStatus",
    (
        _always(1, "name"),
        Field(2, "state", "message", CONTAINER_STATE, omitempty=False),
        Field(3, "lastState", "message", CONTAINER_STATE, omitempty=False),
        Field(4, "ready", "bool", omitempty=False),
        Field(5, "restartCount", "int64", omitempty=False),
        _always(6, "image"),
        _always(7, "imageID"),
        Field(8, "containerID", "string"),
        Field(9, "started", "bool", pointer=True),
    ),
)

POD_STATUS = Message(
    "PodStatus",
    (
        Field(17, "observedGeneration", "int64"),
        Field(1, "phase", "string"),
        Field(2, "conditions", "message", POD_CONDITION, repeated=True),
        Field(3, "message", "string"),
        Field(4, "reason", "string"),
        Field(11, "nominatedNodeName", "string"),
        Field(5, "hostIP", "string"),
        Field(6, "podIP", "string"),
        Field(7, "startTime", "time", pointer=True),
        Field(10, "initContainerStatuses", "message", CONTAINER_STATUS, repeated=True),
        Field(8, "containerStatuses", "message", CONTAINER_STATUS, repeated=True),
        Field(9, "qosClass", "string"),
        Field(14, "resize", "string"),
    ),
)

# Of the spec only the node the pod is bound to: which node a lost or evicted worker was on.
POD_SPEC = Message("PodSpec", (Field(10, "nodeName", "string"),))

# metadata, spec and status are Go structs, not pointers: JSON always shows them, if only as {}.
POD = Message(
    "Pod",
    (
        Field(1, "metadata", "message", OBJECT_META, omitempty=False),
        Field(2, "spec", "message", POD_SPEC, omitempty=False),
        Field(3, "status", "message", POD_STATUS, omitempty=False),
    ),
)

STATUS_CAUSE = Message(
    "StatusCause",
    (Field(1, "reason", "string"), Field(2, "message", "string"), Field(3, "field", "string")),
)

STATUS_DETAILS = Message(
    "StatusDetails",
    (
        Field(1, "name", "string"),
        Field(2, "group", "string"),
        Field(3, "kind", "string"),
        Field(6, "uid", "string"),
        Field(4, "causes", "message", STATUS_CAUSE, repeated=True),
        Field(5, "retryAfterSeconds", "int64"),
    ),
)

STATUS = Message(
    "Status",
    (
        Field(1, "metadata", "message", LIST_META, omitempty=False),
        Field(2, "status", "string"),
        Field(3, "message", "string"),
        Field(4, "reason", "string"),
        Field(5, "details", "message", STATUS_DETAILS, pointer=True),
        Field(6, "code", "int64"),
    ),
)

# runtime.Unknown's TypeMeta: the kind of the object in a body's `k8s\x00` envelope.
TYPE_META = Message("TypeMeta", (Field(1, "apiVersion", "string"), Field(2, "kind", "string")))

# A watch frame: meta/v1 WatchEvent, its object a runtime.RawExtension holding the enveloped object.
RAW_EXTENSION = Message("RawExtension", (Field(1, "raw", "bytes"),))
WATCH_EVENT = Message(
    "WatchEvent", (Field(1, "type", "string"), Field(2, "object", "message", RAW_EXTENSION))
)
