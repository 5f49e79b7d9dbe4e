"""The one bounded "seen" set the controller keeps per process: the newest entries, the oldest forgotten."""

from __future__ import annotations

import ast
from pathlib import Path

from mpioperator.controller.bounded import BoundedSet

CONTROLLER = Path(__file__).resolve().parents[3] / "mpioperator" / "controller"


def test_the_oldest_entry_is_forgotten_once_the_set_is_full() -> None:
    seen: BoundedSet[str] = BoundedSet(2)
    for uid in ("a", "b", "c"):
        seen.add(uid)
    assert ("a" in seen, "b" in seen, "c" in seen) == (False, True, True)


def test_an_entry_added_again_is_the_newest() -> None:
    seen: BoundedSet[str] = BoundedSet(2)
    seen.add("a")
    seen.add("b")
    seen.add("a")
    seen.add("c")
    assert ("a" in seen, "b" in seen) == (True, False)


def test_first_is_true_only_the_first_time() -> None:
    seen: BoundedSet[tuple[str, str]] = BoundedSet(10)
    assert [seen.first(("u", "created")), seen.first(("u", "created"))] == [True, False]


def test_no_controller_module_keeps_a_seen_set_of_its_own() -> None:
    """The sets of UIDs seen once (deleted pods, announced jobs, warned jobs, one-shot events) are all
    BoundedSet: no class of the controller defines a `seen` or `first` method but BoundedSet."""
    own = []
    for path in CONTROLLER.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ClassDef) and node.name != "BoundedSet":
                methods = {n.name for n in node.body if isinstance(n, ast.FunctionDef)}
                if methods & {"seen", "first"}:
                    own.append(f"{path.name}:{node.name}")
    assert sorted(own) == []
