"""A walk's answer is kept only for the very same pods and only until the time it says it changes."""

from __future__ import annotations

from mpioperator.api.objects import Obj
from mpioperator.controller.pod_walks import PodWalks


def _pods(n: int) -> list[Obj]:
    return [{"metadata": {"name": f"w-{i}"}} for i in range(n)]


def test_a_walk_over_the_same_pods_is_made_once_until_the_time_it_said_it_changes() -> None:
    walks, made = PodWalks(), []
    launcher, workers = _pods(1), _pods(3)

    def make() -> tuple[int, float | None]:
        made.append(1)
        return len(made), 100.0

    assert walks.walk("uid", launcher, workers, "k", make, now=10.0) == 1
    assert walks.walk("uid", list(launcher), workers, "k", make, now=99.0) == 1
    assert walks.walk("uid", launcher, workers, "k", make, now=100.0) == 2


def test_other_pods_or_an_equal_copy_of_the_list_are_walked_again() -> None:
    walks, made = PodWalks(), []
    launcher, workers = _pods(1), _pods(3)

    def make() -> tuple[int, float | None]:
        made.append(1)
        return len(made), None

    assert walks.walk("uid", launcher, workers, "k", make, now=0.0) == 1
    assert walks.walk("uid", launcher, list(workers), "k", make, now=0.0) == 2
    assert walks.walk("uid", _pods(1), workers, "k", make, now=0.0) == 3
    walks.forget("uid")
    assert walks.walk("uid", launcher, workers, "k", make, now=0.0) == 4
