"""Random invalid MPIJobs never crash the operator: each is rejected by the API server (the CRD from
manifests/base), or, once stored, one sync reports it with a Warning event or an Invalid condition.

The sync may end in SyncError: that is the controller's "retry with back-off" signal for a child the API
server refused, and it is raised only after the event was recorded. Any other exception is a crash.
Each example gets a namespace of its own, so a name the fuzzer draws twice never meets the first one's
children; the controller's informers watch every namespace, as a cluster-scoped operator does.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import TypeVar

import pytest
import pytest_asyncio
from hypothesis import event, given, settings
from hypothesis import strategies as st
from prometheus_client import CollectorRegistry

from mpioperator.api.objects import Obj
from mpioperator.clock import RealClock
from mpioperator.controller.controller import ControllerSettings, MPIJobController
from mpioperator.controller.errors import SyncError
from mpioperator.controller.metrics import JobMetrics
from mpioperator.kube.client import KubeClient
from mpioperator.testing.cluster import LocalCluster
from mpioperator.testing.rest import RestError
from mpioperator.testing.wait import async_wait_for
from test.fuzz.invalid import DEFECTS, invalid_mpijobs
from test.fuzz.priority_classes import priority_classes

EXAMPLES_PER_DEFECT = 25
# Reported by the operator = a Warning event about the job, except this one: it only says the pod template's
# restartPolicy was replaced, and comes with many valid jobs too.
NOT_A_REPORT = {"SetPodTemplateRestartPolicy"}
_namespaces = itertools.count()
T = TypeVar("T")


@pytest_asyncio.fixture(scope="module")
async def watching(mpijob_crd: LocalCluster) -> AsyncIterator[MPIJobController]:
    """The controller with its informers on every namespace and no worker: only the test syncs.

    The PriorityClasses valid templates may name exist, so a report can only be about the defect.
    """
    client = KubeClient.from_kubeconfig(mpijob_crd.kubeconfig, qps=500, burst=1000)
    controller = MPIJobController(
        client, JobMetrics(CollectorRegistry()), settings=ControllerSettings(), clock=RealClock()
    )
    stop = asyncio.Event()
    task = asyncio.ensure_future(controller.run(0, stop, drain_timeout=0.1))

    async def synced() -> bool:
        if task.done():
            task.result()
        return controller.ready_check() is None

    try:
        await async_wait_for(synced, timeout=60, what="informer caches synced")
        with priority_classes(mpijob_crd):
            yield controller
    finally:
        stop.set()
        await asyncio.wait_for(asyncio.gather(task, return_exceptions=True), 30)
        await client.close()


def refusal(cluster: LocalCluster, path: str, body: Obj) -> RestError | None:
    """Create `body`; the API server's refusal, or None when it was stored."""
    try:
        cluster.rest.create(path, body)
    except RestError as err:
        return err
    return None


def reported(cluster: LocalCluster, namespace: str, name: str) -> str:
    """How the operator told the user: the reason of a Warning event, or of an Invalid condition; "" if not."""
    events = cluster.rest.get(
        f"/api/v1/namespaces/{namespace}/events?fieldSelector=involvedObject.name%3D{name}"
    )["items"]
    for item in events:
        if item.get("type") == "Warning" and item.get("reason") not in NOT_A_REPORT:
            return f"Warning event {item.get('reason')}"
    job = cluster.rest.get(f"/apis/kubeflow.org/v2beta1/namespaces/{namespace}/mpijobs/{name}")
    for condition in (job.get("status") or {}).get("conditions") or ():
        if condition.get("type") == "Invalid" and condition.get("status") == "True":
            return f"condition Invalid {condition.get('reason')}"
    return ""


@pytest.mark.parametrize("kind", sorted(DEFECTS))
@settings(max_examples=EXAMPLES_PER_DEFECT)
@given(data=st.data())
async def test_invalid_specs_are_rejected_or_reported_and_never_crash_a_sync(
    mpijob_crd: LocalCluster, watching: MPIJobController, kind: str, data: st.DataObject
) -> None:
    cluster = mpijob_crd
    job, defect = data.draw(invalid_mpijobs(DEFECTS[kind]))
    namespace = f"fuzz-invalid-{next(_namespaces)}"
    cluster.rest.create("/api/v1/namespaces", {"metadata": {"name": namespace}})
    body = {
        **job,
        "metadata": {k: v for k, v in job["metadata"].items() if k != "uid"} | {"namespace": namespace},
    }
    name = body["metadata"]["name"]
    refused = refusal(cluster, f"/apis/kubeflow.org/v2beta1/namespaces/{namespace}/mpijobs", body)
    if refused is not None:
        assert refused.status in (400, 422), f"{defect}: {refused}"
        event(f"rejected by the API server: {defect}")
        return
    await async_wait_for(
        _async(lambda: watching.syncer.has_job(namespace, name)),
        timeout=30,
        what=f"{namespace}/{name} cached",
    )
    with contextlib.suppress(SyncError):
        await watching.syncer.sync(f"{namespace}/{name}")
    await watching.recorder.flush()
    how = await async_wait_for(
        _async(lambda: reported(cluster, namespace, name)),
        timeout=15,
        what=f"a Warning event or Invalid condition for {defect} ({namespace}/{name})",
    )
    event(f"stored, then reported by a {how}: {defect}")


def _async(probe: Callable[[], T]) -> Callable[[], Awaitable[T]]:
    async def call() -> T:
        return probe()

    return call
