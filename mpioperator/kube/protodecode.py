"""Decoding protobuf messages of the Kubernetes API into the dicts their JSON would parse into.

A `Plan` is built once from a message's schema (`protoschema`) and the fields to keep (a projection's
`FieldSpec`, or KEEP for the whole message). Decoding walks a message's fields by key: a kept field is
decoded, any other is jumped over without being read, so a pod's spec, managed fields and container
statuses cost one length read each. What comes out equals the JSON projection of the same object: the
same keys, the same values (times as RFC 3339 strings in UTC, to the second, as the server's JSON).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from typing import Any

from mpioperator.kube.protoschema import Field, Message
from mpioperator.kube.protowire import (
    AS_JSON,
    LEN,
    VARINT,
    WireError,
    length_delimited,
    signed64,
    skip,
    varint,
)

Obj = dict[str, Any]
# A length-delimited field's action decodes buf[start:stop] into `out`; a varint field's gets its value.
LenAction = Callable[[Obj, bytes, int, int], None]
VarintAction = Callable[[Obj, int], None]

KEEP_WHOLE = None


class Plan:
    """How to decode one message: an action per kept field's key, and the values JSON shows for kept
    fields that were not on the wire."""

    def __init__(self, message: Message, spec: Mapping[str, Any] | None) -> None:
        if spec is KEEP_WHOLE and not message.complete:
            raise ValueError(f"{message.name} cannot be kept whole: protoschema does not list all its fields")
        kept = message.fields if spec is None else tuple(message.field(name) for name in spec)
        self.message = message
        self.by_len: dict[int, LenAction] = {}
        self.by_varint: dict[int, VarintAction] = {}
        defaults: list[tuple[str, Callable[[], Any]]] = []
        for field in kept:
            sub = None if spec is None else spec[field.name]
            if field.kind in ("bool", "int64"):
                self.by_varint[field.number << 3 | VARINT] = _scalar(field)
                self.by_len[field.number << 3 | LEN] = _wrong_wire_type(message, field)
            else:
                self.by_len[field.number << 3 | LEN] = _len_action(field, sub)
                self.by_varint[field.number << 3 | VARINT] = _wrong_wire_type(message, field)
            default = _default(field, sub)
            if default is not None:
                defaults.append((field.name, default))
        self.kept_numbers = frozenset(field.number for field in kept)
        self.defaults = tuple(defaults)

    def decode(self, buf: bytes, pos: int, end: int) -> Obj:
        out: Obj = {}
        by_len = self.by_len
        while pos < end:
            key = buf[pos]
            pos += 1
            if key >= 0x80:
                key, pos = varint(buf, pos - 1)
            if key & 7 == LEN:
                length = buf[pos]
                pos += 1
                if length >= 0x80:
                    length, pos = varint(buf, pos - 1)
                stop = pos + length
                action = by_len.get(key)
                if action is not None:
                    if stop > end:
                        raise WireError(f"{self.message.name} field {key >> 3} runs past its message")
                    action(out, buf, pos, stop)
                pos = stop  # a skipped field running past the end is caught below
            elif key & 7 == VARINT:
                value, pos = varint(buf, pos)
                scalar = self.by_varint.get(key)
                if scalar is not None:
                    scalar(out, value)
            elif key >> 3 in self.kept_numbers:
                raise WireError(f"{self.message.name} field {key >> 3} came with wire type {key & 7}")
            else:
                pos = skip(buf, pos, key & 7)
        if pos != end:
            raise WireError(f"{self.message.name} ends at offset {pos}, past its length ({end})")
        for name, default in self.defaults:
            if name not in out:
                out[name] = default()
        return out


def _sub_plan(field: Field, sub: Any) -> Plan:
    assert field.message is not None
    if sub is KEEP_WHOLE or isinstance(sub, Mapping):
        return Plan(field.message, sub)
    (items,) = sub  # a one-element list: the FieldSpec of each item
    return Plan(field.message, items)


def _default(field: Field, sub: Any) -> Callable[[], Any] | None:
    """What JSON shows for a kept field absent from the wire, or None where JSON leaves it out too."""
    if field.omitempty or field.pointer or field.repeated:
        return None
    if field.kind == "string":
        return str
    if field.kind == "int64":
        return int
    if field.kind == "bool":
        return bool
    if field.kind == "time":
        return lambda: None
    if field.kind == "message":
        plan = _sub_plan(field, sub)
        return lambda: plan.decode(b"", 0, 0)
    raise ValueError(f"no JSON default for {field.kind} field {field.name}")


def _wrong_wire_type(message: Message, field: Field) -> Any:
    def refuse(*_: object) -> None:
        raise WireError(f"{message.name}.{field.name} came with another wire type than its schema's")

    return refuse


def _scalar(field: Field) -> VarintAction:
    name = field.name
    keep_empty = field.pointer or not field.omitempty
    convert: Callable[[int], Any] = bool if field.kind == "bool" else signed64

    def scalar(out: Obj, value: int) -> None:
        if value or keep_empty:
            out[name] = convert(value)

    return scalar


def _len_action(field: Field, sub: Any) -> LenAction:
    name = field.name
    keep_empty = not field.omitempty or field.pointer
    if field.kind == "string":

        def string(out: Obj, buf: bytes, start: int, stop: int) -> None:
            if stop > start or keep_empty:
                out[name] = buf[start:stop].decode("utf-8", AS_JSON)

        return string

    if field.kind == "time":

        def stamp(out: Obj, buf: bytes, start: int, stop: int) -> None:
            text = _time(buf, start, stop)
            if text is not None or keep_empty:
                out[name] = text

        return stamp

    if field.kind == "string_map":

        def entry(out: Obj, buf: bytes, start: int, stop: int) -> None:
            key, value = _map_entry(buf, start, stop)
            mapping = out.get(name)
            if mapping is None:
                out[name] = mapping = {}
            mapping[key] = value

        return entry

    decode = _sub_plan(field, sub).decode
    if field.repeated:

        def item(out: Obj, buf: bytes, start: int, stop: int) -> None:
            items = out.get(name)
            if items is None:
                out[name] = items = []
            items.append(decode(buf, start, stop))

        return item

    def message(out: Obj, buf: bytes, start: int, stop: int) -> None:
        out[name] = decode(buf, start, stop)

    return message


def _map_entry(buf: bytes, pos: int, end: int) -> tuple[str, str]:
    key = value = ""
    while pos < end:
        tag, pos = varint(buf, pos)
        if tag == (1 << 3 | LEN):
            start, pos = length_delimited(buf, pos, end)
            key = buf[start:pos].decode("utf-8", AS_JSON)
        elif tag == (2 << 3 | LEN):
            start, pos = length_delimited(buf, pos, end)
            value = buf[start:pos].decode("utf-8", AS_JSON)
        else:
            pos = skip(buf, pos, tag & 7)
    return key, value


_TIMES: dict[int, str] = {}
_TIMES_KEPT = 4096


def _time(buf: bytes, pos: int, end: int) -> str | None:
    """A meta/v1 Time as the server's JSON shows it: RFC 3339 in UTC, whole seconds; None for the zero
    time, which the server sends as an empty message. Its nanos are dropped, as JSON drops them."""
    if pos == end:
        return None
    seconds = 0
    while pos < end:
        tag, pos = varint(buf, pos)
        if tag == (1 << 3 | VARINT):
            seconds, pos = varint(buf, pos)
            seconds = signed64(seconds)
        else:
            pos = skip(buf, pos, tag & 7)
    return format_seconds(seconds)


def format_seconds(seconds: int) -> str:
    """Seconds since the epoch as the server's JSON shows a meta/v1 Time: RFC 3339 in UTC, whole seconds."""
    text = _TIMES.get(seconds)
    if text is None:
        t = time.gmtime(seconds)
        text = (
            f"{t.tm_year:04d}-{t.tm_mon:02d}-{t.tm_mday:02d}T{t.tm_hour:02d}:{t.tm_min:02d}:{t.tm_sec:02d}Z"
        )
        if len(_TIMES) >= _TIMES_KEPT:
            _TIMES.clear()
        _TIMES[seconds] = text
    return text
