"""Kubernetes-style field errors, rendered exactly as apimachinery's field.Error and ErrorList do.

The rendered text ends up in user-visible events and conditions, and tools grep for it, so the
format (type strings, value quoting, aggregation) follows apimachinery byte for byte.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

# field.ErrorType strings.
NOT_FOUND = "Not found"
REQUIRED = "Required value"
DUPLICATE = "Duplicate value"
INVALID = "Invalid value"
NOT_SUPPORTED = "Unsupported value"
FORBIDDEN = "Forbidden"
TOO_LONG = "Too long"
TOO_MANY = "Too many"
INTERNAL = "Internal error"
TYPE_INVALID = "Invalid value type"

# apimachinery never prints the bad value for these, whatever it is.
_VALUE_HIDDEN = frozenset({REQUIRED, FORBIDDEN, TOO_LONG, INTERNAL})


class _Omitted:
    def __repr__(self) -> str:
        return "<omitted>"


OMIT: Any = _Omitted()


@dataclass(frozen=True, slots=True)
class FieldError:
    type: str
    field: str
    bad_value: Any = OMIT
    detail: str = ""
    origin: str = ""

    def __str__(self) -> str:
        text = f"{self.field}: {self.type}"
        if self.type not in _VALUE_HIDDEN and self.bad_value is not OMIT:
            text += ": " + render_value(self.bad_value)
        if self.detail:
            text += ": " + self.detail
        return text


class JSONString(str):
    """A value of a named Go string type (e.g. CleanPodPolicy): apimachinery JSON-encodes these."""

    __slots__ = ()


_GO_SHORT_ESCAPES = {
    "\a": "\\a",
    "\b": "\\b",
    "\f": "\\f",
    "\n": "\\n",
    "\r": "\\r",
    "\t": "\\t",
    "\v": "\\v",
    '"': '\\"',
    "\\": "\\\\",
}


def _go_text(text: str) -> str:
    """What a Go string would hold: a Python lone surrogate cannot exist there (it decodes as U+FFFD)."""
    return "".join("\ufffd" if 0xD800 <= ord(ch) <= 0xDFFF else ch for ch in text)


def go_quote(text: str) -> str:
    """Go's strconv.Quote (the %q verb): printable runes kept, others escaped."""
    out = ['"']
    for ch in _go_text(text):
        code = ord(ch)
        if ch in _GO_SHORT_ESCAPES:
            out.append(_GO_SHORT_ESCAPES[ch])
        elif ch.isprintable():
            # Python's and Go's notion of printable agree: L, M, N, P, S and the ASCII space.
            out.append(ch)
        elif code < 0x20 or code == 0x7F:
            out.append(f"\\x{code:02x}")
        elif code < 0x10000:
            out.append(f"\\u{code:04x}")
        else:
            out.append(f"\\U{code:08x}")
    out.append('"')
    return "".join(out)


_JSON_HTML_SAFE = (
    ("<", "\\u003c"),
    (">", "\\u003e"),
    ("&", "\\u0026"),
    ("\u2028", "\\u2028"),
    ("\u2029", "\\u2029"),
)


def json_quote(text: str) -> str:
    """Go's encoding/json for a string, which also escapes <, >, &, U+2028 and U+2029."""
    encoded = json.dumps(_go_text(text), ensure_ascii=False)
    for raw, escaped in _JSON_HTML_SAFE:
        encoded = encoded.replace(raw, escaped)
    return encoded


def render_value(value: Any) -> str:
    """A bad value as field.Error prints it."""
    if isinstance(value, JSONString):
        return json_quote(str(value))
    if isinstance(value, str):
        return go_quote(value)
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return "null"
    if isinstance(value, int | float):
        return str(value)
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def required(field: str, detail: str) -> FieldError:
    return FieldError(REQUIRED, field, detail=detail)


def invalid(field: str, value: Any, detail: str, origin: str = "") -> FieldError:
    return FieldError(INVALID, field, value, detail, origin)


def not_supported(field: str, value: Any, supported: Sequence[str]) -> FieldError:
    """`supported` is listed in the order given; upstream passes sorted sets."""
    detail = ""
    if supported:
        detail = "supported values: " + ", ".join(go_quote(v) for v in supported)
    return FieldError(NOT_SUPPORTED, field, value, detail)


def forbidden(field: str, detail: str) -> FieldError:
    return FieldError(FORBIDDEN, field, detail=detail)


def duplicate(field: str, value: Any) -> FieldError:
    return FieldError(DUPLICATE, field, value)


def not_found(field: str, value: Any) -> FieldError:
    return FieldError(NOT_FOUND, field, value)


def too_long(field: str, max_length: int) -> FieldError:
    unit = "byte" if max_length == 1 else "bytes"
    detail = f"may not be more than {max_length} {unit}" if max_length >= 0 else "value is too long"
    return FieldError(TOO_LONG, field, detail=detail)


def aggregate_message(errors: Iterable[FieldError]) -> str:
    """field.ErrorList.ToAggregate().Error(): duplicates dropped, one error as itself, several as [e1, e2]."""
    texts = list(dict.fromkeys(str(e) for e in errors))
    if not texts:
        return ""
    if len(texts) == 1:
        return texts[0]
    return "[" + ", ".join(texts) + "]"
