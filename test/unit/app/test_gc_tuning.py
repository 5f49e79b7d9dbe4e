"""The operator's garbage-collector thresholds."""

from __future__ import annotations

import gc
from collections.abc import Iterator

import pytest

from mpioperator.app.gc_tuning import THRESHOLDS, tune_gc


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
