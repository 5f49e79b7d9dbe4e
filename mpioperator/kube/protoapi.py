"""The API server's protobuf bodies: the `k8s\\x00` envelope, lists, watch frames and Status, read by upb.

A body of `application/vnd.kubernetes.protobuf` is the 4 bytes `k8s\\x00` and a runtime.Unknown: the
object's apiVersion and kind, and its own message as `raw`. A watch over protobuf is a stream of frames,
each a 4-byte big-endian length and a meta/v1 WatchEvent (its type, and the object in the same envelope
as a body). Anything else (another kind than expected, an encoding inside the envelope, a malformed
message) raises WireError, and the caller falls back to JSON.

Every message is parsed by upb (`protoupb`). Only where a message's fields start and stop is found here,
for the envelope and a list's top level (`_fields`): each listed item is then parsed on its own, so a
10,000-pod list never has all its pods parsed at once (upb keeps a parsed message's unknown fields, the
whole pod, until the message is freed: parsing the list in one piece held three times its size).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

from mpioperator.kube.protoschema import LIST_META, STATUS, TYPE_META, WATCH_EVENT, Message
from mpioperator.kube.protoupb import Obj, WireError, as_json, message_class, parse, string, text

PROTOBUF = "application/vnd.kubernetes.protobuf"
MAGIC = b"k8s\x00"
# Bigger than any object etcd stores (1.5 MiB by default) with room to spare; a larger length is a
# broken stream, not a frame to allocate.
MAX_FRAME = 64 << 20

_TYPE_META = message_class(TYPE_META)
_LIST_META = message_class(LIST_META)
_STATUS = message_class(STATUS)
_WATCH_EVENT = message_class(WATCH_EVENT)

_LEN = 2
_FIXED_WIDTHS = {1: 8, 5: 4}  # fixed64 and fixed32: skipped by their width


def is_protobuf(content_type: str | None) -> bool:
    return bool(content_type) and str(content_type).split(";", 1)[0].strip() == PROTOBUF


def _varint(buf: bytes, pos: int, end: int) -> tuple[int, int]:
    value = shift = 0
    while pos < end and shift < 64:
        byte = buf[pos]
        pos += 1
        value |= (byte & 0x7F) << shift
        if byte < 0x80:
            return value, pos
        shift += 7
    raise WireError(f"malformed varint ending at offset {pos}")


def _fields(buf: bytes, pos: int, end: int) -> Iterator[tuple[int, int, int]]:
    """The number, start and stop of each length-delimited field of the message in buf[pos:end]; fields
    of other wire types are passed over."""
    while pos < end:
        key, pos = _varint(buf, pos, end)
        wire_type = key & 7
        if wire_type == _LEN:
            length, pos = _varint(buf, pos, end)
            stop = pos + length
            if stop > end:
                raise WireError(f"field {key >> 3} of {length} bytes runs past its message's end")
            yield key >> 3, pos, stop
            pos = stop
        elif wire_type == 0:
            pos = _varint(buf, pos, end)[1]
        elif wire_type in _FIXED_WIDTHS:
            pos += _FIXED_WIDTHS[wire_type]
        else:
            raise WireError(f"unsupported wire type {wire_type} at offset {pos}")
    if pos != end:
        raise WireError(f"message runs past its end ({pos} > {end})")


def unwrap(buf: bytes, pos: int, end: int) -> tuple[str, int, int]:
    """The kind in the envelope at `pos`, and where its raw message starts and stops."""
    if buf[pos : pos + len(MAGIC)] != MAGIC:
        raise WireError("no k8s protobuf envelope")
    kind, raw = "", (end, end)
    for number, start, stop in _fields(buf, pos + len(MAGIC), end):
        if number == 1:  # typeMeta
            kind = string(parse(_TYPE_META, buf, start, stop).kind)
        elif number == 2:  # raw
            raw = (start, stop)
        elif number == 3 and stop > start:  # contentEncoding
            raise WireError(f"envelope with content encoding {text(buf[start:stop])!r}")
    return kind, raw[0], raw[1]


def _status(buf: bytes, start: int, stop: int) -> Obj:
    return {"kind": "Status", "apiVersion": "v1", **as_json(parse(_STATUS, buf, start, stop), STATUS)}


def decode_status(body: bytes) -> Obj:
    """An error answer's Status (a protobuf body in its envelope) as its JSON would parse."""
    kind, start, stop = unwrap(body, 0, len(body))
    if kind != "Status":
        raise WireError(f"expected a Status, got {kind!r}")
    return _status(body, start, stop)


def _list_meta(buf: bytes, start: int, stop: int) -> Obj:
    return as_json(parse(_LIST_META, buf, start, stop), LIST_META)


class ProtoProjection:
    """Decoders for a list body and a watch frame of `message`'s kind: each object is parsed by upb and
    handed to `from_message`, and what it returns is the object. A caller that knows which few fields it
    reads builds its own form straight from the message."""

    def __init__(self, message: Message, from_message: Callable[[Any], Obj]) -> None:
        cls = message_class(message)

        def decode_item(buf: bytes, start: int, stop: int) -> Obj:
            return from_message(parse(cls, buf, start, stop))

        self._decode_item = decode_item
        self._kind = message.name

    def list(self, body: bytes) -> Obj:
        kind, pos, end = unwrap(body, 0, len(body))
        if kind != f"{self._kind}List":
            raise WireError(f"expected a {self._kind}List, got {kind!r}")
        meta: Obj = {}
        items: list[Obj] = []
        item = self._decode_item
        for number, start, stop in _fields(body, pos, end):
            if number == 2:
                items.append(item(body, start, stop))
            elif number == 1:
                meta = _list_meta(body, start, stop)
        return {"metadata": meta, "items": items}

    def event(self, frame: bytes) -> Obj:
        """One watch frame as {"type", "object"}; an ERROR event's object is its Status, whole."""
        pos, end = 0, len(frame)
        if frame.startswith(MAGIC):
            kind, pos, end = unwrap(frame, 0, end)
            if kind != "WatchEvent":
                raise WireError(f"expected a WatchEvent, got {kind!r}")
        parsed = parse(_WATCH_EVENT, frame, pos, end)
        event: Obj = {}
        if parsed.HasField("type"):
            event["type"] = string(parsed.type)
        if parsed.HasField("object"):
            if not parsed.object.HasField("raw"):
                raise WireError("watch event without an object")
            event["object"] = self._object(parsed.object.raw)
        return event

    def _object(self, raw: bytes) -> Obj:
        kind, start, stop = unwrap(raw, 0, len(raw))
        if kind == self._kind:
            return self._decode_item(raw, start, stop)
        if kind == "Status":
            return _status(raw, start, stop)
        raise WireError(f"expected a {self._kind} or a Status, got {kind!r}")


def list_continue(body: bytes) -> str | None:
    """The continue token of a protobuf list page, read from its ListMeta without decoding any item;
    None when there is none, or when the items come first (the server writes ListMeta first)."""
    _, pos, end = unwrap(body, 0, len(body))
    for number, start, stop in _fields(body, pos, end):
        if number == 1:
            return _list_meta(body, start, stop).get("continue") or None
        if number == 2:
            return None
    return None
