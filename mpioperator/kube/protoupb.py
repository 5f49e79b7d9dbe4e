"""Message classes of the `protobuf` package's C runtime (upb), built from our schema (`protoschema`).

upb parses a message's bytes in C; Python then reads only the fields it needs, as attributes. The classes
are made at import from the field numbers and types of `protoschema`, as proto2 messages (the API's
syntax), so a field's presence is known for the fields JSON shows as null or leaves out; no protoc and no
`.proto` files are involved. Fields the schema does not list are kept by upb as unknown bytes and never
read; a listed field that arrives with another wire type is unknown too, so it is left out.

upb does not check that a proto2 string is UTF-8: one that is not comes back as `bytes`, so every string
read off a message goes through `string`, which shows it as the server's JSON does.
"""

from __future__ import annotations

import codecs
import time
from typing import Any

from google.protobuf import descriptor_pb2, descriptor_pool, message, message_factory

from mpioperator.kube.protoschema import Field, Message

_PACKAGE = "mpioperator.k8s"
_FIELD = descriptor_pb2.FieldDescriptorProto
_SCALARS = {
    "string": _FIELD.TYPE_STRING,
    "bytes": _FIELD.TYPE_BYTES,
    "bool": _FIELD.TYPE_BOOL,
    "int64": _FIELD.TYPE_INT64,
}
# meta/v1 Time's seconds and nanos; a map<string, string>'s entry, as proto2 sends it (repeated pairs).
_TIME = "Time"
_STRING_PAIR = "StringPair"

Obj = dict[str, Any]


class WireError(ValueError):
    """The bytes are not a well-formed message of the kind expected."""


def _each_byte_replaced(exc: UnicodeError) -> tuple[str, int]:
    assert isinstance(exc, UnicodeDecodeError)
    return "\ufffd" * (exc.end - exc.start), exc.end


# Protobuf strings are bytes on the wire and the API server stores them as sent, UTF-8 or not. Its JSON
# (Go's encoding/json) writes each byte that is not part of valid UTF-8 as U+FFFD; Python's "replace"
# would write one U+FFFD for a whole broken sequence. This handler does as Go does, so both encodings
# give the same text.
AS_JSON = "mpioperator.as-json"
codecs.register_error(AS_JSON, _each_byte_replaced)


def text(raw: bytes) -> str:
    """A protobuf string's bytes as the server's JSON shows them."""
    return raw.decode("utf-8", AS_JSON)


def string(value: str | bytes) -> str:
    """A string field as upb hands it back, as the server's JSON shows it (`bytes` when not UTF-8)."""
    return value if isinstance(value, str) else text(value)


def _describe(root: Message) -> descriptor_pb2.FileDescriptorProto:
    file = descriptor_pb2.FileDescriptorProto(name=f"{root.name}.proto", package=_PACKAGE, syntax="proto2")
    time_message = file.message_type.add(name=_TIME)
    time_message.field.add(name="seconds", number=1, type=_FIELD.TYPE_INT64, label=_FIELD.LABEL_OPTIONAL)
    time_message.field.add(name="nanos", number=2, type=_FIELD.TYPE_INT32, label=_FIELD.LABEL_OPTIONAL)
    pair = file.message_type.add(name=_STRING_PAIR)
    pair.field.add(name="key", number=1, type=_FIELD.TYPE_STRING, label=_FIELD.LABEL_OPTIONAL)
    pair.field.add(name="value", number=2, type=_FIELD.TYPE_STRING, label=_FIELD.LABEL_OPTIONAL)
    described: set[str] = set()

    def describe(msg: Message) -> None:
        if msg.name in described:
            return
        described.add(msg.name)
        proto = file.message_type.add(name=msg.name)
        for field in msg.fields:
            proto.field.append(_field(field))
            if field.message is not None:
                describe(field.message)

    describe(root)
    return file


def _field(field: Field) -> descriptor_pb2.FieldDescriptorProto:
    repeated = field.repeated or field.kind == "string_map"
    proto = _FIELD(
        name=field.name,
        number=field.number,
        label=_FIELD.LABEL_REPEATED if repeated else _FIELD.LABEL_OPTIONAL,
    )
    if field.kind in _SCALARS:
        proto.type = _SCALARS[field.kind]
    else:
        proto.type = _FIELD.TYPE_MESSAGE
        referenced = {"time": _TIME, "string_map": _STRING_PAIR}.get(field.kind)
        if referenced is None:
            assert field.message is not None
            referenced = field.message.name
        proto.type_name = f".{_PACKAGE}.{referenced}"
    return proto


def message_class(root: Message) -> Any:
    """The upb class of `root` (its sub-messages as the schema lists them), in a pool of its own."""
    pool = descriptor_pool.DescriptorPool()
    pool.Add(_describe(root))
    return message_factory.GetMessageClass(pool.FindMessageTypeByName(f"{_PACKAGE}.{root.name}"))


def parse(cls: Any, buf: bytes, start: int, stop: int) -> Any:
    """buf[start:stop] parsed as `cls`, without copying the bytes; malformed bytes raise WireError."""
    try:
        return cls.FromString(memoryview(buf)[start:stop])
    except message.DecodeError as exc:
        raise WireError(f"{cls.DESCRIPTOR.name} did not parse: {exc}") from exc


_TIMES: dict[int, str] = {}
_TIMES_KEPT = 4096


def format_seconds(seconds: int) -> str:
    """Seconds since the epoch as the server's JSON shows a meta/v1 Time: RFC 3339 in UTC, whole seconds.
    A time no calendar holds raises (OverflowError, OSError or ValueError), and the caller falls back."""
    formatted = _TIMES.get(seconds)
    if formatted is None:
        t = time.gmtime(seconds)
        formatted = (
            f"{t.tm_year:04d}-{t.tm_mon:02d}-{t.tm_mday:02d}T{t.tm_hour:02d}:{t.tm_min:02d}:{t.tm_sec:02d}Z"
        )
        if len(_TIMES) >= _TIMES_KEPT:
            _TIMES.clear()
        _TIMES[seconds] = formatted
    return formatted


def time_of(stamp: Any) -> str | None:
    """A Time message as JSON shows it: None for the zero time (an empty message); nanos are dropped,
    as the server's JSON drops them."""
    return format_seconds(stamp.seconds) if stamp.ByteSize() else None


def as_json(msg: Any, schema: Message) -> Obj:
    """The fields of `msg` that `schema` lists, as the server's JSON of the same object parses: Go's rules
    for zero values (`protoschema`), strings as `string` reads them, times as `time_of`."""
    out: Obj = {}
    for field in schema.fields:
        name = field.name
        value = getattr(msg, name)
        if field.kind == "string_map":
            if value:
                out[name] = {string(pair.key): string(pair.value) for pair in value}
            continue
        if field.repeated:
            if value:
                assert field.message is not None
                out[name] = [as_json(item, field.message) for item in value]
            continue
        always = not (field.omitempty or field.pointer)
        if not msg.HasField(name):
            if always:  # absent from the wire: what JSON always shows
                out[name] = _zero(field, value)
            continue
        if field.kind == "message":
            assert field.message is not None
            out[name] = as_json(value, field.message)
        elif field.kind == "time":
            stamp = time_of(value)
            if stamp is not None or field.pointer or always:
                out[name] = stamp
        elif value or field.pointer or always:
            out[name] = string(value) if field.kind == "string" else value
    return out


def _zero(field: Field, value: Any) -> Any:
    if field.kind == "message":
        assert field.message is not None
        return as_json(value, field.message)
    if field.kind == "time":
        return None
    return "" if field.kind == "string" else value  # upb's default: 0, False, b""
