"""The operator's garbage-collector thresholds."""

from __future__ import annotations

import gc
import weakref
from collections.abc import Iterator

import pytest

from mpioperator.app.gc_tuning import (
    THRESHOLDS,
    pause_collection,
    resume_collection_past_the_cache,
    tune_gc,
)


@pytest.fixture
def restore_gc() -> Iterator[None]:
    saved = gc.get_threshold()
    yield
    gc.set_threshold(*saved)


@pytest.mark.usefixtures("restore_gc")
def test_tune_gc_collects_the_young_generation_far_less_often_and_reports_the_old_thresholds() -> None:
    gc.set_threshold(700, 10, 10)
    assert tune_gc() == (700, 10, 10)
    assert gc.get_threshold() == THRESHOLDS
    assert THRESHOLDS[0] >= 10_000


class Cached:
    """Stands for a cached API object: tracked by the collector, and weakly referenceable."""

    __slots__ = ("__weakref__", "fields")

    def __init__(self, n: int) -> None:
        self.fields = {"name": f"pod-{n}"}


@pytest.fixture
def restore_collection() -> Iterator[None]:
    yield
    gc.unfreeze()
    gc.enable()


@pytest.mark.usefixtures("restore_collection")
def test_objects_cached_while_paused_are_left_out_of_later_collections_yet_freed_when_dropped() -> None:
    pause_collection()
    cache = [Cached(n) for n in range(20_000)]
    resume_collection_past_the_cache()

    assert gc.isenabled()
    assert gc.get_count()[0] < 100, "enabling would start a collection of everything cached"
    walked = {id(obj) for obj in gc.get_objects()}
    assert not any(id(obj) in walked for obj in cache[::1000])
    dropped = weakref.ref(cache.pop())
    assert dropped() is None
