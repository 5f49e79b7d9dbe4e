"""json_copy: the controller's deep copy of API objects."""

from __future__ import annotations

import datetime as dt
from typing import Any

from mpioperator.api.objects import json_copy


def test_a_json_copy_shares_nothing_mutable_with_the_original() -> None:
    original: dict[str, Any] = {"spec": {"replicas": [1, {"name": "w"}]}, "n": 2.5, "flag": None, "ok": True}
    copied = json_copy(original)
    assert copied == original
    copied["spec"]["replicas"][1]["name"] = "changed"
    copied["spec"]["replicas"].append(3)
    assert original == {"spec": {"replicas": [1, {"name": "w"}]}, "n": 2.5, "flag": None, "ok": True}


def test_values_json_cannot_hold_are_copied_as_they_are() -> None:
    class Name(str):
        pass

    when = dt.datetime(2026, 11, 26, tzinfo=dt.UTC)
    copied = json_copy({"at": when, "name": Name("x"), 7: "int key", "big": 2**70})
    assert copied == {"at": when, "name": "x", 7: "int key", "big": 2**70}
    assert isinstance(copied["at"], dt.datetime) and type(copied["name"]) is Name
