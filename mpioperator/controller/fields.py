"""Field access on API objects as plain dicts: semantic equality and dotted paths."""

from __future__ import annotations

from typing import Any

from mpioperator.api.objects import Obj


def same(a: Any, b: Any) -> bool:
    """Semantic equality for API data: an absent field equals its zero value (omitempty)."""
    if isinstance(a, dict) and isinstance(b, dict):
        keys = set(a) | set(b)
        return all(same(a.get(k), b.get(k)) for k in keys)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
    if a in (None, False, "", 0, {}, []) and b in (None, False, "", 0, {}, []):
        return True
    return bool(a == b)


def get_path(obj: Obj, dotted: str) -> Any:
    cur: Any = obj
    for part in dotted.split("."):
        if not isinstance(cur, dict):
            return None
        cur = cur.get(part)
    return cur


def set_path(obj: Obj, dotted: str, value: Any) -> None:
    *parents, last = dotted.split(".")
    cur = obj
    for part in parents:
        cur = cur.setdefault(part, {})
    cur[last] = value
