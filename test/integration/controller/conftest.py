"""The controller in-process against a real API server; the test plays kubelet and the Job controller."""

from __future__ import annotations

import asyncio
import contextlib
import os
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio
from prometheus_client import CollectorRegistry

from mpioperator.clock import RealClock
from mpioperator.controller.controller import ControllerSettings, MPIJobController
from mpioperator.controller.metrics import JobMetrics
from mpioperator.kube.client import KubeClient
from mpioperator.testing.cluster import LocalCluster, wait_crd_established
from mpioperator.testing.podgroup_crds import scheduler_plugins_crd, volcano_crd
from mpioperator.testing.wait import async_wait_for, wait_for

CRD_FILE = Path(
    os.environ.get(
        "MPIJOB_CRD", Path(__file__).resolve().parents[3] / "manifests" / "base" / "kubeflow.org_mpijobs.yaml"
    )
)


def with_mpijob_crd(cluster: LocalCluster) -> LocalCluster:
    """`cluster` once the MPIJob CRD is applied, established and its resource served."""
    cluster.kubectl("apply", "--server-side", "-f", str(CRD_FILE))
    wait_crd_established(cluster, "mpijobs.kubeflow.org")
    wait_for(
        lambda: cluster.rest.get("/apis/kubeflow.org/v2beta1/mpijobs"), timeout=30, what="mpijobs served"
    )
    return cluster


@pytest.fixture(scope="session")
def mpijob_crd(apiserver_cluster: LocalCluster) -> LocalCluster:
    return with_mpijob_crd(apiserver_cluster)


# The calls that write: what CountingWriter counts.
WRITES = ("create", "update", "update_status", "patch", "delete")


@dataclass
class CountingWriter:
    """Passes API calls through to the client and counts the writes, to prove a sync was a no-op."""

    client: KubeClient
    writes: list[tuple[str, str, str]] = field(default_factory=list)
    # Every write with the object it sent (None for patches and deletes), never cleared by the tests.
    sent: list[tuple[str, str, str, dict[str, Any] | None]] = field(default_factory=list)

    def __getattr__(self, name: str) -> Any:
        target = getattr(self.client, name)
        if name not in WRITES:
            return target

        async def counted(res: Any, *args: Any, **kwargs: Any) -> Any:
            first = args[0] if args else ""
            label = first if isinstance(first, str) else first.get("metadata", {}).get("name", "")
            self.writes.append((name, res.plural, label))
            self.sent.append((name, res.plural, label, first if isinstance(first, dict) else None))
            return await target(res, *args, **kwargs)

        return counted


@dataclass
class Harness:
    cluster: LocalCluster
    namespace: str
    controller: MPIJobController
    writer: CountingWriter
    metrics: JobMetrics
    registry: CollectorRegistry
    # What stops the controller, and its run: a test may stop it before the block ends.
    stop: asyncio.Event
    run: asyncio.Future[None]

    async def synced_again(self, job: str, times: int = 1) -> None:
        """`job` synced `times` more times by the running controller, one after another, as further events
        would cause. A test calling the syncer itself would race the controller's own sync of the same
        job, which its queue never runs twice at once (a status write then fails with a 409)."""
        queue = self.controller.queue

        async def nothing_to_do() -> bool:
            return self.nothing_ready()

        key = f"{self.namespace}/{job}"
        for _ in range(times):
            queue.add(key)
            await async_wait_for(nothing_to_do, timeout=30, what=f"the controller to sync {job} again")
            # A failed sync goes back through the rate limiter; a successful one forgets the key.
            assert queue.num_requeues(key) == 0, f"the sync of {job} failed: the operator's log says why"

    def nothing_ready(self) -> bool:
        """No key ready or in process; a held job's timed re-check may still be waiting, minutes away."""
        queue = self.controller.queue
        return len(queue) == 0 and queue.processing == 0


@contextlib.asynccontextmanager
async def running_controller(
    cluster: LocalCluster,
    namespace: str,
    *,
    gang_scheduling: str = "",
    writer_type: type[CountingWriter] | None = None,
    settings: dict[str, Any] | None = None,
    kubeconfig: Path | None = None,
) -> AsyncIterator[Harness]:
    """The controller, watching `namespace` only, run in-process until the block ends.

    `writer_type` wraps the client (a CountingWriter that injects faults, say); `settings` are further
    ControllerSettings fields, as the operator's flags would set them; `kubeconfig` other credentials than
    the cluster administrator's (the operator's ServiceAccount, say)."""
    client = KubeClient.from_kubeconfig(kubeconfig or cluster.kubeconfig, qps=200, burst=400)
    writer = (writer_type or CountingWriter)(client)
    registry = CollectorRegistry()
    metrics = JobMetrics(registry)
    controller = MPIJobController(
        client,
        metrics,
        settings=ControllerSettings(
            namespaces=(namespace,), gang_scheduling=gang_scheduling, **(settings or {})
        ),
        clock=RealClock(),
        writer=writer,
    )
    stop = asyncio.Event()
    task = asyncio.ensure_future(controller.run(1, stop, drain_timeout=5))
    try:
        await asyncio.wait_for(_synced(controller, task), 60)
        yield Harness(cluster, namespace, controller, writer, metrics, registry, stop, task)
    finally:
        stop.set()
        await asyncio.wait_for(asyncio.gather(task, return_exceptions=True), 30)
        await client.close()


@pytest_asyncio.fixture
async def harness(mpijob_crd: LocalCluster, make_namespace: Any) -> AsyncIterator[Harness]:
    async with running_controller(mpijob_crd, make_namespace(mpijob_crd)) as running:
        yield running


@pytest.fixture(scope="session")
def podgroup_crds(mpijob_crd: LocalCluster) -> LocalCluster:
    """Both gang schedulers' PodGroup CRDs, from their Go modules, as upstream's envtest installs them."""
    for crd, name in (
        (volcano_crd(), "podgroups.scheduling.volcano.sh"),
        (scheduler_plugins_crd(), "podgroups.scheduling.x-k8s.io"),
    ):
        mpijob_crd.kubectl("apply", "--server-side", "-f", str(crd))
        wait_crd_established(mpijob_crd, name)
    return mpijob_crd


# Upstream's integration test runs scheduler-plugins under this name too: any value but "volcano" works.
PLUGINS_SCHEDULER = "default-scheduler"


@pytest_asyncio.fixture
async def volcano(podgroup_crds: LocalCluster, make_namespace: Any) -> AsyncIterator[Harness]:
    """A controller with --gang-scheduling=volcano, watching a namespace of its own."""
    async with running_controller(
        podgroup_crds, make_namespace(podgroup_crds), gang_scheduling="volcano"
    ) as h:
        yield h


@pytest_asyncio.fixture
async def plugins(podgroup_crds: LocalCluster, make_namespace: Any) -> AsyncIterator[Harness]:
    """A controller with scheduler-plugins gang scheduling, watching a namespace of its own."""
    namespace = make_namespace(podgroup_crds)
    async with running_controller(podgroup_crds, namespace, gang_scheduling=PLUGINS_SCHEDULER) as h:
        yield h


async def _synced(controller: MPIJobController, task: asyncio.Future[None]) -> None:
    while controller.ready_check() is not None:
        if task.done():
            task.result()
            raise RuntimeError("controller stopped before its caches synced")
        await asyncio.sleep(0.05)
