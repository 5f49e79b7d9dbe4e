"""Decoding list bodies and watch lines into only the fields a cache keeps.

A pod is about 10 kB of JSON, and a controller that reads a dozen of its fields still pays for turning the
rest into Python objects, collecting them and freeing them again. A projection names the fields to keep;
msgspec skips everything else while it parses, which on a list of 10,000 running pods is several times
faster than parsing whole and slimming afterwards. What comes out is plain dicts and lists, as from the
generic decoder, only with fewer keys.

Anything the projection's shape does not admit (a Status object on an ERROR watch event, a field of an
unexpected type) is decoded whole instead, so a projection can only ever save work, never lose an event.

A mapping named KEY_NAMES keeps its keys only: its values are skipped while parsing (msgspec.Raw points
into the body, no string is built) and cached as None. A Secret's data is what it is for: the cache of
every Secret in the cluster then costs its names, not its credentials.

A projection given its kind's protobuf message and a `from_message` also reads protobuf lists and watch
frames (`protoapi`, upb), into the same objects; the client falls back to JSON for anything protobuf does
not fit.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Mapping, Sequence
from types import GenericAlias
from typing import Any, TypedDict

import msgspec
import orjson

from mpioperator.api.objects import Obj
from mpioperator.kube.protoapi import ProtoProjection
from mpioperator.kube.protoschema import Message

KEEP = None
"""A field kept exactly as the server sent it, whatever its type."""


class _KeyNames:
    def __repr__(self) -> str:
        return "KEY_NAMES"


KEY_NAMES = _KeyNames()
"""A mapping of which only the keys are kept, each with the value None (JSON only; not inside lists)."""

FieldSpec = Mapping[str, "FieldSpec | Sequence[FieldSpec] | _KeyNames | None"]
"""The fields of an object to keep: KEEP, KEY_NAMES, a nested FieldSpec for an object, or a one-element
list holding the FieldSpec of a list's items. Every field may be absent or null."""

# The shapes are built at run time from a FieldSpec, which mypy cannot follow: both are typed Any.
_typed_dict: Any = TypedDict


def _list_of(item: Any) -> Any:
    return GenericAlias(list, (item,))


def _shape(spec: FieldSpec, name: str) -> Any:
    fields: dict[str, Any] = {}
    for key, sub in spec.items():
        if sub is KEEP:
            fields[key] = Any
        elif sub is KEY_NAMES:
            fields[key] = dict[str, msgspec.Raw] | None
        elif isinstance(sub, Mapping):
            fields[key] = _shape(sub, f"{name}_{key}") | None
        elif isinstance(sub, Sequence):
            (items,) = sub
            fields[key] = _list_of(_shape(items, f"{name}_{key}")) | None
    return _typed_dict(name, fields, total=False)


def _key_name_paths(spec: FieldSpec, within: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    """Where the KEY_NAMES mappings of `spec` are, each as the keys leading to it."""
    paths: list[tuple[str, ...]] = []
    for key, sub in spec.items():
        if sub is KEY_NAMES:
            paths.append((*within, key))
        elif isinstance(sub, Mapping):
            paths += _key_name_paths(sub, (*within, key))
        elif isinstance(sub, Sequence) and _key_name_paths(sub[0]):
            raise ValueError(f"KEY_NAMES inside the list {'.'.join((*within, key))} is not supported")
    return paths


def _intern(key: Any) -> Any:
    return sys.intern(key) if isinstance(key, str) else key


def _names_only(obj: Obj, paths: Sequence[tuple[str, ...]]) -> Obj:
    for path in paths:
        parent: Any = obj
        for key in path[:-1]:
            parent = parent.get(key) if isinstance(parent, dict) else None
        if isinstance(parent, dict) and isinstance(parent.get(path[-1]), dict):
            # Interned: the same few key names recur in every Secret of a kind.
            parent[path[-1]] = dict.fromkeys(map(_intern, parent[path[-1]]))
    return obj


# The watch events whose object is one of the projected kind (ERROR's is a Status, BOOKMARK's a stub).
_OBJECT_EVENTS = frozenset(("ADDED", "MODIFIED", "DELETED"))


class Projection:
    """Decoders for a list response and a watch line of objects shaped by `spec`.

    `finish` turns each decoded object into the form its cache keeps. Given also the protobuf `message`
    of the kind (`protoschema`) and `from_message`, which builds that same form from a message parsed by
    upb, it decodes protobuf too (`protobuf`), and the client asks the server for protobuf: both encodings
    give equal objects.
    """

    def __init__(
        self,
        spec: FieldSpec,
        name: str = "Projected",
        *,
        message: Message | None = None,
        finish: Callable[[Obj], Obj] | None = None,
        from_message: Callable[[Any], Obj] | None = None,
    ) -> None:
        if (finish is None) != (from_message is None):
            raise ValueError("finish and from_message come together: both encodings must give one form")
        self._key_names = _key_name_paths(spec)
        if self._key_names and message is not None:
            raise ValueError("KEY_NAMES is read from JSON only: give no protobuf message")
        if (message is None) != (from_message is None):
            raise ValueError("a protobuf message is read by from_message: give both or neither")
        self.protobuf = (
            ProtoProjection(message, from_message)
            if message is not None and from_message is not None
            else None
        )
        self._finish = finish
        item = _shape(spec, name)
        self._list = msgspec.json.Decoder(
            _typed_dict(f"{name}List", {"metadata": Any, "items": _list_of(item) | None}, total=False)
        )
        self._event = msgspec.json.Decoder(
            _typed_dict(f"{name}Event", {"type": Any, "object": item | None}, total=False)
        )

    def list(self, body: bytes) -> Obj:
        """A list response with each item projected; its metadata (continue, resourceVersion) whole."""
        try:
            decoded: Obj = self._list.decode(body)
        except msgspec.DecodeError:
            decoded = _whole(body)
        if self._key_names and decoded.get("items"):
            for item in decoded["items"]:
                _names_only(item, self._key_names)
        finish = self._finish
        if finish is not None and decoded.get("items"):
            decoded["items"] = [finish(item) for item in decoded["items"]]
        return decoded

    def event(self, line: bytes) -> Obj:
        """A watch event with its object projected; ERROR events, whose object is a Status, whole."""
        try:
            decoded: Obj = self._event.decode(line)
        except msgspec.DecodeError:
            decoded = _whole(line)
        if decoded.get("type") == "ERROR":
            return _whole(line)
        if self._key_names and decoded.get("type") in _OBJECT_EVENTS and decoded.get("object"):
            _names_only(decoded["object"], self._key_names)
        if self._finish is not None and decoded.get("type") in _OBJECT_EVENTS and decoded.get("object"):
            decoded["object"] = self._finish(decoded["object"])
        return decoded


def _whole(body: bytes) -> Obj:
    parsed: Obj = orjson.loads(body)
    return parsed
