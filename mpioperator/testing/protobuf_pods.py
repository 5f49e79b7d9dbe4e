"""A pod as the API server's protobuf body, built byte by byte: how a client writes what JSON cannot say.

JSON text is always valid UTF-8, but a protobuf string is just bytes, and the API server stores what it is
sent. A pod POSTed this way can carry an owner reference whose kind is not UTF-8, which the operator's
protobuf decoders must read as the server's JSON shows it (each bad byte as U+FFFD).
"""

from __future__ import annotations

from mpioperator.kube.protoapi import MAGIC, PROTOBUF

CONTENT_TYPE = PROTOBUF


def varint(value: int) -> bytes:
    out = bytearray()
    while value >= 0x80:
        out.append(value & 0x7F | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def field(number: int, payload: bytes) -> bytes:
    """A length-delimited field (a string, bytes or an embedded message)."""
    return varint(number << 3 | 2) + varint(len(payload)) + payload


def owner_reference(api_version: bytes, kind: bytes, name: bytes, uid: bytes) -> bytes:
    # meta/v1 OwnerReference: kind 1, name 3, uid 4, apiVersion 5
    return field(1, kind) + field(3, name) + field(4, uid) + field(5, api_version)


def pod_body(name: str, namespace: str, *, owner: bytes | None = None, image: str = "busybox") -> bytes:
    """A whole POST body: `k8s\\x00` and a runtime.Unknown holding a v1 Pod with one container."""
    meta = field(1, name.encode()) + field(3, namespace.encode())
    if owner is not None:
        meta += field(13, owner)
    container = field(1, b"main") + field(2, image.encode())  # core/v1 Container: name 1, image 2
    pod = field(1, meta) + field(2, field(2, container))  # Pod: metadata 1, spec 2; PodSpec.containers 2
    type_meta = field(1, b"v1") + field(2, b"Pod")
    return MAGIC + field(1, type_meta) + field(2, pod)
