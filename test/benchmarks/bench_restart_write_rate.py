"""API writes of a whole-job-restarting MPIJob whose workers exit at once, over simulated time. A benchmark
that prints figures, not a test.

    .venv/bin/python -m test.benchmarks.bench_restart_write_rate [--workers 64] [--minutes 60] [--max-restarts 100]

The sync handler runs against the in-memory caches of `test/unit/controller/sync_fixtures.py`, and a small
simulated cluster answers its writes: a created worker pod fails `--pod-seconds` later (its container exits
at once), a deleted pod or Job leaves the cache `--gone-seconds` later. The job is synced again when the
cluster changes one of its objects, shortly after each of its own writes (their watch events), and when a
sync asks for a requeue. Time is a FakeClock, so an hour takes a second or two. Every call of the writer
except a `get` counts as a write, as the API server's audit log would count it.
"""

from __future__ import annotations

import argparse
import asyncio
import copy
import heapq
import itertools
import logging
from typing import Any

import structlog

from mpioperator.api.extensions import restarts
from mpioperator.api.objects import Obj
from mpioperator.kube.delete_options import BACKGROUND, DeleteOptions
from mpioperator.kube.resources import Resource
from test.unit.controller.sync_fixtures import RecordingWriter, Scene, job

ECHO_SECONDS = 0.05  # from a write to the watch event that enqueues the job again


class SimulatedCluster(RecordingWriter):
    """The writer, answering as the API server would and changing the caches as the informers would."""

    def __init__(self, pod_seconds: float, gone_seconds: float) -> None:
        super().__init__()
        self.pod_seconds = pod_seconds
        self.gone_seconds = gone_seconds
        self.scene: Scene | None = None
        self.now = 0.0
        self._versions = itertools.count(100)
        # (time, sequence, what happens): the cluster's own changes still to come.
        self.pending: list[tuple[float, int, Any]] = []
        self._seq = itertools.count()

    def _later(self, seconds: float, change: Any) -> None:
        heapq.heappush(self.pending, (self.now + seconds, next(self._seq), change))

    def _cache(self, res: Resource) -> Any:
        assert self.scene is not None
        attr = {"configmaps": "config_maps"}.get(res.plural, res.plural)
        return self.scene.memory[attr]

    async def create(self, res: Resource, body: Obj, namespace: str | None = None) -> Obj:
        made = await super().create(res, body, namespace)
        made["metadata"]["resourceVersion"] = str(next(self._versions))
        cached = copy.deepcopy(made)
        self._cache(res)._objects.append(cached)
        if res.plural == "pods":
            cached["status"] = {"phase": "Pending"}

            def fail() -> None:
                if not cached["metadata"].get("deletionTimestamp"):
                    cached["status"] = {
                        "phase": "Failed",
                        "containerStatuses": [{"state": {"terminated": {"exitCode": 1}}}],
                    }

            self._later(self.pod_seconds, fail)
        return made

    async def update_status(self, res: Resource, body: Obj, namespace: str | None = None) -> Obj:
        written = await super().update_status(res, body, namespace)
        written["metadata"]["resourceVersion"] = str(next(self._versions))
        assert self.scene is not None
        cache = self._cache(res)
        cache.discard(written["metadata"].get("namespace", ""), written["metadata"]["name"])
        cache._objects.append(copy.deepcopy(written))
        self.scene.job = written
        return written

    async def delete(
        self, res: Resource, name: str, namespace: str | None = None, options: DeleteOptions = BACKGROUND
    ) -> Obj:
        answer = await super().delete(res, name, namespace, options)
        cache = self._cache(res)
        found = cache.get(namespace or "", name)
        if found is not None and not found["metadata"].get("deletionTimestamp"):
            found["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z"
            self._later(self.gone_seconds, lambda: cache.discard(namespace or "", name))
        return answer


def writes(cluster: SimulatedCluster) -> int:
    return sum(1 for call in cluster.log if call.verb != "get")


async def simulate(
    workers: int, minutes: float, pod_seconds: float, gone_seconds: float, max_restarts: int
) -> dict[str, Any]:
    cluster = SimulatedCluster(pod_seconds, gone_seconds)
    pi = job(workers=workers)
    pi["metadata"]["annotations"] = {
        restarts.RESTART_POLICY: "OnWorkerFailure",
        restarts.MAX_RESTARTS: str(max_restarts),
    }
    scene = Scene(pi, writer=cluster)
    cluster.scene = scene
    end = minutes * 60.0
    syncs: list[float] = [0.0]
    per_minute: list[int] = []
    count = 0
    while cluster.now < end:
        next_sync = syncs[0] if syncs else float("inf")
        next_change = cluster.pending[0][0] if cluster.pending else float("inf")
        at = min(next_sync, next_change)
        if at == float("inf") or at >= end:
            break
        await scene.clock.advance(at - cluster.now)
        cluster.now = at
        while len(per_minute) < int(at // 60):
            per_minute.append(writes(cluster))
        if next_change <= next_sync:
            _, _, change = heapq.heappop(cluster.pending)
            change()
            heapq.heappush(syncs, at)  # the change's watch event enqueues the job
            continue
        while syncs and syncs[0] <= at:
            heapq.heappop(syncs)  # the work queue holds a key once
        before = writes(cluster)
        result = await scene.sync()
        count += 1
        if writes(cluster) > before:
            heapq.heappush(syncs, at + ECHO_SECONDS)
        if result.requeue_after is not None:
            heapq.heappush(syncs, at + result.requeue_after)
    while len(per_minute) < int(end // 60):
        per_minute.append(writes(cluster))
    rates = [b - a for a, b in zip([0, *per_minute], per_minute, strict=False)]
    status = scene.job.get("status") or {}
    return {
        "syncs": count,
        "writes": writes(cluster),
        "restarts": status.get("restarts", 0),
        "first_minute": rates[0] if rates else 0,
        "first_10_minutes": sum(rates[:10]),
        "per_minute_mean": writes(cluster) / minutes,
        "busiest_minute": max(rates) if rates else 0,
        "phase": status.get("phase"),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    parser.add_argument("--workers", type=int, default=64)
    parser.add_argument("--minutes", type=float, default=60.0)
    parser.add_argument("--pod-seconds", type=float, default=3.0, help="from a pod's create to its failure")
    parser.add_argument("--max-restarts", type=int, default=100)
    parser.add_argument("--gone-seconds", type=float, default=1.0, help="from a delete to the object gone")
    args = parser.parse_args()
    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(logging.WARNING))
    figures = asyncio.run(
        simulate(args.workers, args.minutes, args.pod_seconds, args.gone_seconds, args.max_restarts)
    )
    print(
        f"{args.workers} workers exiting at once, max-restarts {args.max_restarts}, {args.minutes:g} simulated minutes "
        f"(pods fail {args.pod_seconds:g}s after creation, deleted objects gone after {args.gone_seconds:g}s)"
    )
    for key, value in figures.items():
        print(f"  {key:>18}: {value if not isinstance(value, float) else round(value, 1)}")


if __name__ == "__main__":
    main()
