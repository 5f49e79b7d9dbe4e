"""What one sync of a 10,000-worker MPIJob costs the operator's event loop, in memory.

The sync handler runs over the in-memory fakes of test/unit/controller/sync_fixtures.py, its caches
indexed as the operator's informers index them (the production Store and StoreLister, the pods by job
name): the figures are the handler's own work, with no API server and no fake's linear scans in them.
Three states of one job, each synced once to settle and then timed over several syncs:

* suspended: it ran, then was suspended (its launcher Job suspended, its workers gone);
* held: created suspended and never started, as Kueue holds a job until it is admitted;
* running, unchanged: every worker and the launcher Running, every child as the sync wants it;
* running, a pod changed: the same, with one worker's pod updated in the cache before each timed sync.

Each line gives the median CPU time of the timed syncs (what the loop spent, less sensitive to a busy
machine than the wall clock), their median and slowest wall time, and the API requests a timed sync made
(a converged job makes none). The machine is shared: the figures are what one run measured, not a bound.

    .venv/bin/python -m test.benchmarks.bench_big_job_sync --workers 10000 --syncs 5
"""

from __future__ import annotations

import argparse
import asyncio
import copy
import statistics
import time

from mpioperator.cache.store import Store
from mpioperator.controller.sync import SyncSettings
from test.unit.controller import sync_fixtures as fx


def _allowing(workers: int) -> SyncSettings:
    """--max-worker-replicas raised to the job's size (its short names fit a ConfigMap)."""
    return SyncSettings(max_worker_replicas=workers)


def _suspended(workers: int) -> fx.Scene:
    """A job that ran and was suspended: its children as the syncs left them, its launcher suspended."""
    job = fx.job(workers, suspend=True)
    return fx.Scene(
        job, *fx.shared_children(job), fx.launcher(job, suspended=True), settings=_allowing(workers)
    )


def _held(workers: int) -> fx.Scene:
    """A job Kueue holds: created suspended (a suspended launcher Job is made at start-up), never run."""
    job = fx.job(workers, suspend=True)
    job["metadata"]["labels"] = {"kueue.x-k8s.io/queue-name": "user-queue"}
    return fx.Scene(
        job, *fx.shared_children(job), fx.launcher(job, suspended=True), settings=_allowing(workers)
    )


def _running(workers: int) -> fx.Scene:
    job = fx.job(workers)
    return fx.running_scene(job, *(fx.worker(job, i) for i in range(workers)), settings=_allowing(workers))


async def _measure(name: str, scene: fx.Scene, syncs: int, *, touch_a_worker: bool = False) -> None:
    stores = fx.index_listers(scene)
    await scene.sync()
    # The cache now holds the status the first sync wrote, as the MPIJob informer would.
    written = [c.body for c in scene.writer.log if c.verb == "update_status" and c.body is not None]
    if written:
        scene.job["status"] = copy.deepcopy(written[-1]["status"])
    before = len(scene.writer.log)
    wall, cpu = [], []
    for n in range(syncs):
        if touch_a_worker:
            _touch_a_worker(stores["pods"].store, n)
        start, start_cpu = time.perf_counter(), time.process_time()
        await scene.sync()
        wall.append(time.perf_counter() - start)
        cpu.append(time.process_time() - start_cpu)
    requests = (len(scene.writer.log) - before) / syncs
    print(
        f"{name:<20} CPU median {statistics.median(cpu) * 1000:8.1f} ms   "
        f"wall median {statistics.median(wall) * 1000:8.1f} ms, slowest {max(wall) * 1000:8.1f} ms   "
        f"requests per sync {requests:.0f}"
    )


def _touch_a_worker(pods: Store, n: int) -> None:
    """A new version of one worker pod in the cache, as a watch event brings (a new resourceVersion, its
    status as before): the sync after it sees the job's pods changed."""
    pod = copy.deepcopy(next(p for p in pods.list() if p["metadata"]["name"].endswith(f"-worker-{n}")))
    pod["metadata"]["resourceVersion"] = str(1000 + n)
    pods.update(pod)


async def _main(workers: int, syncs: int) -> None:
    print(f"one sync of a {workers}-worker MPIJob, {syncs} timed syncs each")
    for name, build in (("suspended", _suspended), ("held (Kueue)", _held), ("running, unchanged", _running)):
        await _measure(name, build(workers), syncs)
    await _measure("running, a pod changed", _running(workers), syncs, touch_a_worker=True)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--workers", type=int, default=10_000)
    parser.add_argument("--syncs", type=int, default=5)
    args = parser.parse_args()
    asyncio.run(_main(args.workers, args.syncs))


if __name__ == "__main__":
    main()
