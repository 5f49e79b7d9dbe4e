"""How every Kubernetes object is held in this code base: the plain JSON dict the API server sent.

One alias for it, so a signature reads as "an API object" rather than as an arbitrary mapping.
"""

from __future__ import annotations

import copy
from typing import Any, TypeVar, cast

import orjson

Obj = dict[str, Any]
T = TypeVar("T")


# Kinds orjson would otherwise turn into JSON silently (a datetime into a string, a str subclass into a
# plain str): with these options they raise, and such an object is copied by copy.deepcopy instead.
_EXACT = orjson.OPT_PASSTHROUGH_DATETIME | orjson.OPT_PASSTHROUGH_DATACLASS | orjson.OPT_PASSTHROUGH_SUBCLASS


def json_copy(obj: T) -> T:
    """A deep copy of a JSON tree (what the API server sends, what builders make).

    About ten times faster than copy.deepcopy, which keeps a memo of every node and looks up a copier
    for each: a sync copies the MPIJob and its status several times (decisions-local L20). Anything that
    is not plain JSON falls back to copy.deepcopy; a tuple comes back as a list.
    """
    try:
        return cast(T, orjson.loads(orjson.dumps(obj, option=_EXACT)))
    except TypeError:
        return copy.deepcopy(obj)
