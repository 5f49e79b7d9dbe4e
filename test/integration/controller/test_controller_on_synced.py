"""The controller's start-up hook (what the operator uses to trim the first lists' freed memory)."""

from __future__ import annotations

import asyncio
from typing import Any

from prometheus_client import CollectorRegistry

from mpioperator.clock import RealClock
from mpioperator.controller.controller import ControllerSettings, MPIJobController
from mpioperator.controller.metrics import JobMetrics
from mpioperator.kube.client import KubeClient
from mpioperator.testing.cluster import LocalCluster
from mpioperator.testing.mpijobs import mpijob
from mpioperator.testing.wait import async_wait_for
from test.integration.controller.conftest import CountingWriter


async def test_on_synced_runs_once_the_caches_hold_existing_jobs_and_before_any_sync_writes(
    mpijob_crd: LocalCluster, make_namespace: Any
) -> None:
    ns = make_namespace(mpijob_crd)
    mpijob_crd.rest.create(f"/apis/kubeflow.org/v2beta1/namespaces/{ns}/mpijobs", mpijob("pi", workers=1))
    client = KubeClient.from_kubeconfig(mpijob_crd.kubeconfig, qps=200, burst=400)
    writer = CountingWriter(client)
    controller = MPIJobController(
        client,
        JobMetrics(CollectorRegistry()),
        settings=ControllerSettings(namespaces=(ns,)),
        clock=RealClock(),
        writer=writer,
    )
    seen: list[tuple[Any, list[str], int]] = []

    def on_synced() -> None:
        cached = [job["metadata"]["name"] for job in controller.cached_mpijobs() or ()]
        seen.append((controller.ready_check(), cached, len(writer.writes)))

    stop = asyncio.Event()
    task = asyncio.ensure_future(controller.run(1, stop, drain_timeout=5, on_synced=on_synced))
    try:
        # The existing job's first sync creates its children: proof that the workers ran afterwards.

        async def writes() -> int:
            return len(writer.writes)

        await async_wait_for(writes, timeout=60, what="the existing job's first writes")
    finally:
        stop.set()
        await asyncio.wait_for(asyncio.gather(task, return_exceptions=True), 30)
        await client.close()
    assert seen == [(None, ["pi"], 0)]
    assert writer.writes
