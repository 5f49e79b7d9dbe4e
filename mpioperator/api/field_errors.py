"""Kubernetes-style field errors, rendered exactly as apimachinery's field.Error and ErrorList do."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

REQUIRED = "Required value"
INVALID = "Invalid value"
NOT_SUPPORTED = "Unsupported value"

_OMIT = object()


@dataclass(frozen=True, slots=True)
class FieldError:
    type: str
    field: str
    bad_value: Any = _OMIT
    detail: str = ""
    origin: str = ""

    def __str__(self) -> str:
        parts = [f"{self.field}: {self.type}"]
        if self.type != REQUIRED and self.bad_value is not _OMIT:
            parts.append(render_value(self.bad_value))
        if self.detail:
            parts.append(self.detail)
        return ": ".join(parts)


class JSONString(str):
    """A value of a named Go string type: apimachinery renders these through encoding/json."""


def go_quote(text: str) -> str:
    """Go's %q for a string."""
    out = ['"']
    for ch in text:
        code = ord(ch)
        if ch in ('"', "\\"):
            out.append("\\" + ch)
        elif ch == "\n":
            out.append("\\n")
        elif ch == "\t":
            out.append("\\t")
        elif ch == "\r":
            out.append("\\r")
        elif code < 0x20 or code == 0x7F:
            out.append(f"\\x{code:02x}")
        else:
            out.append(ch)
    out.append('"')
    return "".join(out)


def json_quote(text: str) -> str:
    """Go's encoding/json for a string (HTML-safe escaping of <, > and &)."""
    encoded = json.dumps(text, ensure_ascii=False)
    for raw, escaped in (
        ("<", "\\u003c"),
        (">", "\\u003e"),
        ("&", "\\u0026"),
        ("\u2028", "\\u2028"),
        ("\u2029", "\\u2029"),
    ):
        encoded = encoded.replace(raw, escaped)
    return encoded


def render_value(value: Any) -> str:
    if isinstance(value, JSONString):
        return json_quote(str(value))
    if isinstance(value, str):
        return go_quote(value)
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return "null"
    return str(value)


def required(field: str, detail: str) -> FieldError:
    return FieldError(REQUIRED, field, detail=detail)


def invalid(field: str, value: Any, detail: str, origin: str = "") -> FieldError:
    return FieldError(INVALID, field, value, detail, origin)


def not_supported(field: str, value: Any, supported: list[str] | tuple[str, ...]) -> FieldError:
    listed = ", ".join(go_quote(v) for v in sorted(supported))
    return FieldError(NOT_SUPPORTED, field, value, f"supported values: {listed}")


def aggregate_message(errors: list[FieldError]) -> str:
    """utilerrors.NewAggregate(errs).Error(): one error as itself, several as [e1, e2]."""
    texts = [str(e) for e in errors]
    if not texts:
        return ""
    if len(texts) == 1:
        return texts[0]
    return "[" + ", ".join(texts) + "]"
