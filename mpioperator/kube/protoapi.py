"""The API server's protobuf bodies: the `k8s\\x00` envelope, lists, watch frames and Status.

A body of `application/vnd.kubernetes.protobuf` is the 4 bytes `k8s\\x00` and a runtime.Unknown: the
object's apiVersion and kind, and its own message as `raw`. A watch over protobuf is a stream of frames,
each a 4-byte big-endian length and a meta/v1 WatchEvent (its type, and the object in the same envelope
as a body). Anything else (another kind than expected, an encoding inside the envelope, a malformed
message) raises WireError, and the caller falls back to JSON.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from typing import Any

from mpioperator.kube.protodecode import Obj, Plan
from mpioperator.kube.protoschema import LIST_META, STATUS, Message
from mpioperator.kube.protoupb import message_class, parse
from mpioperator.kube.protowire import LEN, WireError, length_delimited, skip, text, varint

PROTOBUF = "application/vnd.kubernetes.protobuf"
MAGIC = b"k8s\x00"
# Bigger than any object etcd stores (1.5 MiB by default) with room to spare; a larger length is a
# broken stream, not a frame to allocate.
MAX_FRAME = 64 << 20


def is_protobuf(content_type: str | None) -> bool:
    return bool(content_type) and str(content_type).split(";", 1)[0].strip() == PROTOBUF


def _string(buf: bytes, pos: int, end: int) -> tuple[str, int]:
    start, stop = length_delimited(buf, pos, end)
    return text(buf[start:stop]), stop


def unwrap(buf: bytes, pos: int, end: int) -> tuple[str, int, int]:
    """The kind in the envelope at `pos`, and where its raw message starts and stops."""
    if buf[pos : pos + len(MAGIC)] != MAGIC:
        raise WireError("no k8s protobuf envelope")
    pos += len(MAGIC)
    kind, raw = "", (pos, pos)
    while pos < end:
        key, pos = varint(buf, pos)
        if key == (1 << 3 | LEN):  # typeMeta
            start, pos = length_delimited(buf, pos, end)
            while start < pos:
                tag, start = varint(buf, start)
                if tag == (2 << 3 | LEN):
                    kind, start = _string(buf, start, pos)
                else:
                    start = skip(buf, start, tag & 7)
        elif key == (2 << 3 | LEN):  # raw
            raw = length_delimited(buf, pos, end)
            pos = raw[1]
        elif key == (3 << 3 | LEN):  # contentEncoding
            encoding, pos = _string(buf, pos, end)
            if encoding:
                raise WireError(f"envelope with content encoding {encoding!r}")
        else:
            pos = skip(buf, pos, key & 7)
    return kind, raw[0], raw[1]


_STATUS = Plan(STATUS, None)
_LIST_META = Plan(LIST_META, None)


def decode_status(body: bytes) -> Obj:
    """An error answer's Status (a protobuf body in its envelope) as its JSON would parse."""
    kind, start, stop = unwrap(body, 0, len(body))
    if kind != "Status":
        raise WireError(f"expected a Status, got {kind!r}")
    return {"kind": "Status", "apiVersion": "v1", **_STATUS.decode(body, start, stop)}


class ProtoProjection:
    """Decoders for a list body and a watch frame of `kind`, keeping the fields `spec` names (the same
    FieldSpec as the JSON projection, and the same dicts out).

    Given `from_message`, each object is instead parsed by upb (`protoupb`) and handed to it as a message,
    and what it returns is the object: a caller that knows which few fields it reads builds its own form
    straight from the message, several times faster than decoding the projection and then slimming it.
    """

    def __init__(
        self,
        message: Message,
        spec: Mapping[str, Any],
        kind: str,
        *,
        from_message: Callable[[Any], Obj] | None = None,
    ) -> None:
        self._decode_item: Callable[[bytes, int, int], Obj]
        if from_message is None:
            self._decode_item = Plan(message, spec).decode
        else:
            cls = message_class(message)

            def decode_item(buf: bytes, start: int, stop: int) -> Obj:
                return from_message(parse(cls, buf, start, stop))

            self._decode_item = decode_item
        self._list_meta = _LIST_META
        self._kind = kind

    def list(self, body: bytes) -> Obj:
        kind, pos, end = unwrap(body, 0, len(body))
        if kind != f"{self._kind}List":
            raise WireError(f"expected a {self._kind}List, got {kind!r}")
        meta: Obj = {}
        items: list[Obj] = []
        item = self._decode_item
        while pos < end:
            key, pos = varint(body, pos)
            if key == (2 << 3 | LEN):
                start, pos = length_delimited(body, pos, end)
                items.append(item(body, start, pos))
            elif key == (1 << 3 | LEN):
                start, pos = length_delimited(body, pos, end)
                meta = self._list_meta.decode(body, start, pos)
            else:
                pos = skip(body, pos, key & 7)
        return {"metadata": meta, "items": items}

    def event(self, frame: bytes) -> Obj:
        """One watch frame as {"type", "object"}; an ERROR event's object is its Status, whole."""
        pos, end = 0, len(frame)
        if frame.startswith(MAGIC):
            kind, pos, end = unwrap(frame, 0, end)
            if kind != "WatchEvent":
                raise WireError(f"expected a WatchEvent, got {kind!r}")
        event: Obj = {}
        while pos < end:
            key, pos = varint(frame, pos)
            if key == (1 << 3 | LEN):
                event["type"], pos = _string(frame, pos, end)
            elif key == (2 << 3 | LEN):  # a RawExtension holding the enveloped object
                start, pos = length_delimited(frame, pos, end)
                event["object"] = self._object(frame, start, pos)
            else:
                pos = skip(frame, pos, key & 7)
        return event

    def _object(self, buf: bytes, pos: int, end: int) -> Obj:
        raw: tuple[int, int] | None = None
        while pos < end:
            key, pos = varint(buf, pos)
            if key == (1 << 3 | LEN):
                raw = length_delimited(buf, pos, end)
                pos = raw[1]
            else:
                pos = skip(buf, pos, key & 7)
        if raw is None:
            raise WireError("watch event without an object")
        kind, start, stop = unwrap(buf, raw[0], raw[1])
        if kind == self._kind:
            return self._decode_item(buf, start, stop)
        if kind == "Status":
            return {"kind": "Status", "apiVersion": "v1", **_STATUS.decode(buf, start, stop)}
        raise WireError(f"expected a {self._kind} or a Status, got {kind!r}")


def read_frames(read: Callable[[int], bytes]) -> Iterator[bytes]:
    """The frames of a protobuf watch stream, from `read(n)` (which may return fewer bytes than asked,
    and b"" at the end); ends cleanly only between frames."""
    while True:
        header = _read_exactly(read, 4, at_start=True)
        if header is None:
            return
        length = int.from_bytes(header, "big")
        if length > MAX_FRAME:
            raise WireError(f"watch frame of {length} bytes")
        body = _read_exactly(read, length, at_start=False)
        assert body is not None
        yield body


def _read_exactly(read: Callable[[int], bytes], n: int, *, at_start: bool) -> bytes | None:
    parts: list[bytes] = []
    got = 0
    while got < n:
        chunk = read(n - got)
        if not chunk:
            if at_start and got == 0:
                return None
            raise WireError(f"watch stream ended inside a frame ({got} of {n} bytes)")
        parts.append(chunk)
        got += len(chunk)
    return b"".join(parts)


def list_continue(body: bytes) -> str | None:
    """The continue token of a protobuf list page, read from its ListMeta without decoding any item;
    None when there is none, or when the items come first (the server writes ListMeta first)."""
    _, pos, end = unwrap(body, 0, len(body))
    while pos < end:
        key, pos = varint(body, pos)
        if key == (1 << 3 | LEN):
            start, stop = length_delimited(body, pos, end)
            return _LIST_META.decode(body, start, stop).get("continue") or None
        if key == (2 << 3 | LEN):
            return None
        pos = skip(body, pos, key & 7)
    return None
