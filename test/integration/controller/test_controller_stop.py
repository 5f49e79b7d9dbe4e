"""What a stop does with a backlog: the syncs in flight finish, the keys still queued are left."""

from __future__ import annotations

import asyncio
import re
from typing import Any

from prometheus_client import CollectorRegistry

from mpioperator.clock import RealClock
from mpioperator.controller.controller import ControllerSettings, MPIJobController
from mpioperator.controller.metrics import JobMetrics
from mpioperator.kube.client import KubeClient
from mpioperator.testing.cluster import LocalCluster
from mpioperator.testing.mpijobs import mpijob

JOBS = 12


class HeldWriter:
    """Passes calls through to the client; every write waits until released, and names its job."""

    def __init__(self, client: KubeClient) -> None:
        self.client = client
        self.release = asyncio.Event()
        self.asked = asyncio.Event()
        self.jobs: set[str] = set()

    def __getattr__(self, name: str) -> Any:
        target = getattr(self.client, name)
        if name not in ("create", "update", "update_status", "patch", "delete"):
            return target

        async def held(res: Any, *args: Any, **kwargs: Any) -> Any:
            first = args[0] if args else ""
            label = first if isinstance(first, str) else first.get("metadata", {}).get("name", "")
            found = re.match(r"job-\d+", label)
            assert found is not None, label
            self.jobs.add(found.group(0))
            self.asked.set()
            await self.release.wait()
            return await target(res, *args, **kwargs)

        return held


async def test_a_stop_finishes_the_sync_in_flight_and_leaves_the_queued_jobs(
    mpijob_crd: LocalCluster, make_namespace: Any
) -> None:
    ns = make_namespace(mpijob_crd)
    for i in range(JOBS):
        body = mpijob(f"job-{i:02d}", workers=1)
        mpijob_crd.rest.create(f"/apis/kubeflow.org/v2beta1/namespaces/{ns}/mpijobs", body)
    client = KubeClient.from_kubeconfig(mpijob_crd.kubeconfig, qps=200, burst=400)
    writer = HeldWriter(client)
    controller = MPIJobController(
        client,
        JobMetrics(CollectorRegistry()),
        settings=ControllerSettings(namespaces=(ns,)),
        clock=RealClock(),
        writer=writer,
    )
    stop = asyncio.Event()
    task = asyncio.ensure_future(controller.run(1, stop, drain_timeout=120))
    try:
        await asyncio.wait_for(writer.asked.wait(), 60)
        assert len(controller.queue) == JOBS - 1, "the other jobs wait in the queue"
        stop.set()
        writer.release.set()
        await asyncio.wait_for(task, 60)
    finally:
        stop.set()
        writer.release.set()
        await asyncio.wait_for(asyncio.gather(task, return_exceptions=True), 60)
        await client.close()
    (synced,) = writer.jobs
    children = [p["metadata"]["name"] for p in mpijob_crd.rest.get(f"/api/v1/namespaces/{ns}/pods")["items"]]
    # The job in flight was synced to the end (its worker exists); no queued job was touched.
    assert children == [f"{synced}-worker-0"]
