"""Answers about cached objects, carried from one reading to the next for the very same objects.

The cache replaces an object that changes rather than changing it, so an object that is the very same as
at the last reading has the same answer: a big job whose one pod changed asks that one pod again. Each
answer is held with its object, so an object's identity is not reused while its answer is kept.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TypeVar

from mpioperator.api.objects import Obj

T = TypeVar("T")

# By id: the object and what was derived from it.
Carried = dict[int, tuple[Obj, T]]


def carried(objs: Iterable[Obj], before: Carried[T], derive: Callable[[Obj], T]) -> Carried[T]:
    """`derive(obj)` for each of `objs`, taken from `before` for an object that is the very same."""
    now: Carried[T] = {}
    for obj in objs:
        key = id(obj)
        kept = before.get(key)
        if kept is None or kept[0] is not obj:
            kept = (obj, derive(obj))
        now[key] = kept
    return now
