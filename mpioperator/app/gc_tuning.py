"""Garbage-collector thresholds for a process whose heap is mostly cached API objects.

Every watch event parses into a tree of a hundred or so dicts and lists. With CPython's default
thresholds (700, 10, 10) the young generation is collected every few events, and the collections that
follow walk the growing cache again and again: on a recorded stream of worker pods that took two thirds
of an informer's CPU (test/benchmarks/bench_informer.py). The objects are acyclic JSON, so collecting
less often loses nothing but a little latency in freeing the rare cyclic garbage.
"""

from __future__ import annotations

import gc

# Measured on the informer benchmark: 8-10k events/s at the defaults, 19-22k with these.
THRESHOLDS = (50_000, 20, 20)


def tune_gc() -> tuple[int, int, int]:
    """Apply THRESHOLDS to this process; returns the ones in force before."""
    before = gc.get_threshold()
    gc.set_threshold(*THRESHOLDS)
    return before


def pause_collection() -> None:
    """No collections until resume_collection: a new leader's first lists allocate the whole cache at once,
    and every collection during them walks all of it so far without freeing any of it (measured on
    2,000 MPIJobs and 10,000 pods: 0.1 s of the 1 s the lists take)."""
    gc.disable()


def resume_collection() -> None:
    gc.enable()


def resume_collection_past_the_cache() -> None:
    """Resume collections once the first lists are cached, without the collection that enabling alone
    starts at once: every object allocated while paused is in the young generation, so that collection
    walked the whole fresh cache (0.1 s of a 1.3 s start-up with 2,000 MPIJobs and 10,000 pods) to free
    nothing. Freezing first moves what is alive now out of every later collection and zeroes the counts.
    A cached object is still freed when its last reference goes; only a cycle among the frozen objects
    would stay, and cached API objects hold none."""
    gc.freeze()
    gc.enable()
