"""What a stop does with a backlog: the syncs in flight finish, the keys still queued are left."""

from __future__ import annotations

import asyncio
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from mpioperator.testing.cluster import LocalCluster
from mpioperator.testing.mpijobs import mpijob
from test.integration.controller.conftest import WRITES, CountingWriter, running_controller

JOBS = 12


@dataclass
class HeldWriter(CountingWriter):
    """Counts writes as CountingWriter does, each once released; says when the first was asked for."""

    release: asyncio.Event = field(default_factory=asyncio.Event)
    asked: asyncio.Event = field(default_factory=asyncio.Event)

    def __getattr__(self, name: str) -> Any:
        target: Callable[..., Any] = super().__getattr__(name)
        if name not in WRITES:
            return target

        async def held(*args: Any, **kwargs: Any) -> Any:
            self.asked.set()
            await self.release.wait()
            return await target(*args, **kwargs)

        return held


async def test_a_stop_finishes_the_sync_in_flight_and_leaves_the_queued_jobs(
    mpijob_crd: LocalCluster, make_namespace: Any
) -> None:
    ns = make_namespace(mpijob_crd)
    for i in range(JOBS):
        body = mpijob(f"job-{i:02d}", workers=1)
        mpijob_crd.rest.create(f"/apis/kubeflow.org/v2beta1/namespaces/{ns}/mpijobs", body)
    async with running_controller(mpijob_crd, ns, writer_type=HeldWriter) as harness:
        writer = harness.writer
        assert isinstance(writer, HeldWriter)
        try:
            await asyncio.wait_for(writer.asked.wait(), 60)
            assert len(harness.controller.queue) == JOBS - 1, "the other jobs wait in the queue"
            harness.stop.set()
        finally:
            writer.release.set()
        await asyncio.wait_for(harness.run, 60)
    named = [re.match(r"job-\d+", name) for _, _, name in writer.writes]
    assert all(named), writer.writes  # every write names its job
    (synced,) = {found.group(0) for found in named if found}
    children = [p["metadata"]["name"] for p in mpijob_crd.rest.get(f"/api/v1/namespaces/{ns}/pods")["items"]]
    # The job in flight was synced to the end (its worker exists); no queued job was touched.
    assert children == [f"{synced}-worker-0"]
