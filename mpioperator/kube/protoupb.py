"""Message classes of the `protobuf` package's C runtime (upb), built from our schema (`protoschema`).

The hand-written wire decoder (`protodecode`) walks every field of a pod in Python, which on a 10,000-pod
list costs more than everything else the operator does to start. upb parses the same bytes in C; Python
then reads only the fields it needs, as attributes. The classes are made at import from the same field
numbers and types the wire decoder uses, as proto2 messages (the API's syntax), so a field's presence is
known for the fields JSON shows as null or leaves out. Fields the schema does not list are kept by upb as
unknown bytes and never read; a listed field that arrives with another wire type is unknown too.

upb does not check that a proto2 string is UTF-8: one that is not comes back as `bytes`, so every string
read off a message goes through `string`.
"""

from __future__ import annotations

from typing import Any

from google.protobuf import descriptor_pb2, descriptor_pool, message, message_factory

from mpioperator.kube.protoschema import Field, Message
from mpioperator.kube.protowire import WireError, text

_PACKAGE = "mpioperator.k8s"
_FIELD = descriptor_pb2.FieldDescriptorProto
_SCALARS = {"string": _FIELD.TYPE_STRING, "bool": _FIELD.TYPE_BOOL, "int64": _FIELD.TYPE_INT64}
# meta/v1 Time's seconds and nanos; a map<string, string>'s entry, as proto2 sends it (repeated pairs).
_TIME = "Time"
_STRING_PAIR = "StringPair"

DecodeError = message.DecodeError


def _describe(root: Message) -> descriptor_pb2.FileDescriptorProto:
    file = descriptor_pb2.FileDescriptorProto(name=f"{root.name}.proto", package=_PACKAGE, syntax="proto2")
    time = file.message_type.add(name=_TIME)
    time.field.add(name="seconds", number=1, type=_FIELD.TYPE_INT64, label=_FIELD.LABEL_OPTIONAL)
    time.field.add(name="nanos", number=2, type=_FIELD.TYPE_INT32, label=_FIELD.LABEL_OPTIONAL)
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
    except DecodeError as exc:
        raise WireError(f"{cls.DESCRIPTOR.name} did not parse: {exc}") from exc


def string(value: str | bytes) -> str:
    """A string field as upb hands it back, as the server's JSON shows it (`bytes` when not UTF-8)."""
    return value if isinstance(value, str) else text(value)
