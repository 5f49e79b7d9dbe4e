"""How fast one informer turns recorded watch events into cached objects, and what each cached Pod costs,
next to the official client's generated-model path. A benchmark that prints figures, not a test.

    .venv/bin/python -m test.benchmarks.bench_informer [--events 20000]

Our path is the operator's own: each recorded line goes through the watch parser the real stream uses,
then the reflector, the indexed store and a handler's ordered delivery of a real SharedInformer.
Pinned to one core, so the figure is per core. Each informer path runs with CPython's default GC
thresholds and with the ones the operator sets at start-up (mpioperator.app.gc_tuning).
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import os
import time
import tracemalloc
from collections.abc import AsyncGenerator, Callable
from dataclasses import dataclass, replace
from typing import Any

from mpioperator.api.objects import Obj
from mpioperator.app.gc_tuning import THRESHOLDS, tune_gc
from mpioperator.cache.informer import SharedInformer, Transform, strip_managed_fields
from mpioperator.cache.reflector import DEFAULT_OPTIONS
from mpioperator.controller.pod_cache import POD_FIELDS, slim_pod
from mpioperator.kube.list_options import EVERYTHING, ListOptions
from mpioperator.kube.projection import Projection
from mpioperator.kube.resources import PODS, Resource, stamp_kind
from mpioperator.kube.watch import parse_event
from test.benchmarks.recorded_pods import watch_lines


class RecordedWatch:
    """A ListerWatcher that lists nothing, then replays the recorded lines once and stays open."""

    def __init__(self, lines: list[bytes]) -> None:
        self._lines = lines

    async def list_pages(
        self, res: Resource, namespace: str | None = None, options: ListOptions = EVERYTHING
    ) -> AsyncGenerator[Obj, None]:
        yield {"metadata": {"resourceVersion": "1"}, "items": []}

    async def watch(
        self, res: Resource, namespace: str | None, options: ListOptions
    ) -> AsyncGenerator[Obj, None]:
        stamp = stamp_kind(res)
        loads = options.projection.event if options.projection is not None else None
        for line in self._lines:
            yield parse_event(line, stamp, loads)
        await asyncio.Event().wait()


@dataclass(frozen=True)
class Run:
    events: int
    wall: float
    cpu: float
    bytes_per_object: float


class Measurement:
    """Wall and CPU time of a block, and the memory it left allocated (when traced), per event."""

    def __init__(self, events: int, *, trace_memory: bool) -> None:
        self._events = events
        self._trace = trace_memory
        self.run = Run(events, 0.0, 0.0, 0.0)

    def __enter__(self) -> Measurement:
        gc.collect()
        if self._trace:
            tracemalloc.start()
        self._before = tracemalloc.get_traced_memory()[0] if self._trace else 0
        self._wall, self._cpu = time.perf_counter(), time.process_time()
        return self

    def __exit__(self, *exc: object) -> None:
        wall, cpu = time.perf_counter() - self._wall, time.process_time() - self._cpu
        size = 0.0
        if self._trace:
            gc.collect()
            size = (tracemalloc.get_traced_memory()[0] - self._before) / self._events
            tracemalloc.stop()
        self.run = Run(self._events, wall, cpu, size)


async def _informer_run(
    lines: list[bytes], transform: Transform | None, projection: Projection | None, *, measure_memory: bool
) -> Run:
    seen = 0
    done = asyncio.Event()

    def on_add(obj: Obj) -> None:
        nonlocal seen
        seen += 1
        if seen == len(lines):
            done.set()

    informer = SharedInformer(
        RecordedWatch(lines),
        PODS,
        transform=transform,
        options=replace(DEFAULT_OPTIONS, projection=projection),
    )
    informer.add_event_handler(on_add=on_add)
    with Measurement(len(lines), trace_memory=measure_memory) as measured:
        informer.start()
        await done.wait()
    assert len(informer.store) == len(lines)
    await informer.stop()
    return measured.run


def _model_run(lines: list[bytes], *, measure_memory: bool) -> Run:
    # The one place the benchmark touches the official client: the path D3 keeps off every hot path.
    import json

    from kubernetes.client import ApiClient

    client = ApiClient()
    deserialize: Callable[[Any, str], Any] = client._ApiClient__deserialize  # type: ignore[attr-defined]
    cache: dict[str, Any] = {}
    with Measurement(len(lines), trace_memory=measure_memory) as measured:
        for line in lines:
            pod = deserialize(json.loads(line)["object"], "V1Pod")
            cache[f"{pod.metadata.namespace}/{pod.metadata.name}"] = pod
    assert len(cache) == len(lines)
    return measured.run


def _row(name: str, timed: Run, sized: Run) -> str:
    rate = timed.events / timed.wall
    return f"{name:<80}{rate:>12,.0f}{timed.cpu / timed.events * 1e6:>14.1f}{sized.bytes_per_object:>16,.0f}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--events", type=int, default=20000, help="recorded watch events per run")
    parser.add_argument("--model-events", type=int, default=5000, help="events for the generated-model path")
    args = parser.parse_args(argv)
    if hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})
    lines = watch_lines(args.events)
    model_lines = lines[: args.model_events]
    average = sum(map(len, lines)) // len(lines)
    print(f"{len(lines)} recorded ADDED events of running worker pods, {average} B each")
    print(f"{'path':<80}{'events/s':>12}{'CPU us/event':>14}{'B/cached pod':>16}")
    runs: list[tuple[str, Transform | None, Projection | None]] = [
        ("pods projected while parsing, then slimmed", slim_pod, Projection(POD_FIELDS, "Pod")),
        ("pods slimmed after parsing whole", slim_pod, None),
        ("managedFields stripped", strip_managed_fields, None),
        ("no transform", None, None),
    ]
    for gc_name in ("default GC", f"operator GC {THRESHOLDS}"):
        if gc_name != "default GC":
            tune_gc()
        for name, transform, projection in runs:
            timed = asyncio.run(_informer_run(lines, transform, projection, measure_memory=False))
            sized = asyncio.run(_informer_run(lines, transform, projection, measure_memory=True))
            print(_row(f"informer, {name}, {gc_name}", timed, sized))
        timed = _model_run(model_lines, measure_memory=False)
        sized = _model_run(model_lines, measure_memory=True)
        print(_row(f"client V1Pod models ({len(model_lines)} ev), {gc_name}", timed, sized))
    print("one core; figures vary with the machine and whatever else runs on it")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
