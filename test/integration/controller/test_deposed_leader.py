"""A leader that loses its Lease stops at once: nothing it started keeps running, and nothing is written.

Losing the Lease cancels `MPIJobController.run`. Two leaders writing at once is the failure leader
election exists to prevent, so when that cancellation has finished no worker, handler, watch or event
sender of the controller may be left, no key may be synced, and the API server may receive no write.
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime as dt
import json
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio
from prometheus_client import CollectorRegistry

from mpioperator.app.leases import KubeLeaseClient
from mpioperator.clock import RealClock
from mpioperator.controller.controller import ControllerSettings, MPIJobController
from mpioperator.controller.metrics import JobMetrics
from mpioperator.kube.client import KubeClient
from mpioperator.leaderelection.elector import LeaderElector, LeadershipLost
from mpioperator.testing.audit import apiserver_audit_args
from mpioperator.testing.cluster import LocalCluster, wait_crd_established
from mpioperator.testing.mpijobs import mpijob
from mpioperator.testing.wait import ProbeAborted, async_wait_for
from test.integration.controller.conftest import CRD_FILE

# Tells the controller's requests apart from the test's own (same user) in the audit log.
OPERATOR_AGENT = "mpi-operator-under-test"
ADMIN = "admin"  # the local cluster's only user; the test's REST client writes as it too
JOBS = 50  # the burst the lease is lost in the middle of
BURST_QPS = 20  # the deposed leader's client: slow enough that the burst outlasts stepping down


def _controller(client: KubeClient, namespace: str) -> MPIJobController:
    return MPIJobController(
        client,
        JobMetrics(CollectorRegistry()),
        settings=ControllerSettings(namespaces=(namespace,)),
        clock=RealClock(),
    )


def _started_since(before: set[asyncio.Task[Any]]) -> list[asyncio.Task[Any]]:
    """Tasks started after `before` was taken that are still running (the caller's own excepted)."""
    current = asyncio.current_task()
    return [t for t in asyncio.all_tasks() if t not in before and t is not current and not t.done()]


async def test_a_key_added_after_the_controller_is_cancelled_is_not_synced(
    mpijob_crd: LocalCluster, make_namespace: Any
) -> None:
    namespace = make_namespace(mpijob_crd)
    client = KubeClient.from_kubeconfig(mpijob_crd.kubeconfig, qps=200, burst=400)
    controller = _controller(client, namespace)
    synced_after_cancel: list[str] = []
    cancelled = False
    sync = controller.syncer.sync

    async def observed_sync(key: str) -> Any:
        if cancelled:
            synced_after_cancel.append(key)
        return await sync(key)

    controller.syncer.sync = observed_sync  # type: ignore[method-assign]
    before = asyncio.all_tasks()
    try:
        run = asyncio.ensure_future(controller.run(2, asyncio.Event()))

        async def ready() -> bool:
            return controller.ready_check() is None

        await async_wait_for(ready, timeout=60, what="informer caches synced")

        run.cancel()  # what losing the Lease does
        with contextlib.suppress(asyncio.CancelledError):
            await run
        cancelled = True
        controller.queue.add(f"{namespace}/late")

        async def idle() -> bool:
            return controller.queue_idle()

        await async_wait_for(idle, timeout=10, what="the key refused or synced")
        assert synced_after_cancel == []
        assert _started_since(before) == []
    finally:
        await client.close()


# --- a lease lost in the middle of a burst, writes counted by the API server's audit log --------------


@dataclass
class AuditedCluster:
    cluster: LocalCluster
    log: Path


@pytest.fixture(scope="module")
def audited(tmp_path_factory: pytest.TempPathFactory) -> Iterator[AuditedCluster]:
    """An API server of its own that logs every write of its admin user, with the user agent."""
    args, log = apiserver_audit_args(tmp_path_factory.mktemp("audit"), ADMIN)
    cluster = LocalCluster("apiserver", apiserver_args=args)
    cluster.start()
    try:
        cluster.kubectl("apply", "--server-side", "-f", str(CRD_FILE))
        wait_crd_established(cluster, "mpijobs.kubeflow.org")
        yield AuditedCluster(cluster, log)
    finally:
        cluster.stop()


@dataclass(frozen=True)
class AuditedWrite:
    received: dt.datetime
    verb: str
    resource: str
    name: str


def operator_writes(log: Path) -> list[AuditedWrite]:
    """Writes the controller's client made, as the API server logged them on completion."""
    found = []
    for line in log.read_text().splitlines():
        record = json.loads(line)
        if record.get("stage") != "ResponseComplete" or record.get("userAgent") != OPERATOR_AGENT:
            continue
        ref = record.get("objectRef") or {}
        found.append(
            AuditedWrite(
                dt.datetime.fromisoformat(record["requestReceivedTimestamp"].replace("Z", "+00:00")),
                record["verb"],
                ref.get("resource", "") + ("/" + ref["subresource"] if ref.get("subresource") else ""),
                ref.get("name", ""),
            )
        )
    return found


@pytest_asyncio.fixture
async def burst_namespace(audited: AuditedCluster) -> AsyncIterator[str]:
    name = f"burst-{dt.datetime.now(dt.UTC).strftime('%H%M%S%f')}"
    audited.cluster.rest.create("/api/v1/namespaces", {"metadata": {"name": name}})
    yield name


async def test_a_lease_lost_mid_burst_stops_every_write_before_the_elector_gives_up(
    audited: AuditedCluster, burst_namespace: str
) -> None:
    """Fifty jobs of four workers are being created when another identity takes the Lease. Once the
    elector has stepped down (LeadershipLost: the process exits next), the API server receives no write
    from the deposed leader, and no task it started is left running."""
    rest, ns = audited.cluster.rest, burst_namespace
    # At 20 writes a second the burst (about nine writes a job) lasts some twenty seconds, so the Lease is
    # surely lost in its middle; at full speed an idle machine finished it before the elector stepped
    # down. Lease calls have a token bucket of their own, so the renewals do not wait behind the burst.
    client = KubeClient.from_kubeconfig(
        audited.cluster.kubeconfig, user_agent=OPERATOR_AGENT, qps=BURST_QPS, burst=BURST_QPS
    )
    controller = _controller(client, ns)
    elector = LeaderElector(
        KubeLeaseClient(client),
        name="mpi-operator",
        namespace=ns,
        identity="deposed",
        clock=RealClock(),
        lease_duration=4.0,
        # Two seconds of slack for a loaded machine; stepping down still comes long before the burst ends.
        renew_deadline=2.0,
        retry_period=0.2,
    )
    before = asyncio.all_tasks()
    election = asyncio.ensure_future(elector.run(lambda: controller.run(2, asyncio.Event())))
    try:

        async def ready() -> bool:
            if election.done():
                election.result()
            return controller.ready_check() is None

        await async_wait_for(ready, timeout=60, what="leading with synced caches")

        def submit_burst() -> None:
            for i in range(JOBS):
                rest.create(
                    f"/apis/kubeflow.org/v2beta1/namespaces/{ns}/mpijobs", mpijob(f"burst-{i}", workers=4)
                )

        # The test's REST client blocks: on the event loop, fifty creates on a loaded machine held the
        # elector's renewals past their one-second deadline, and it stepped down before the usurper came.
        await asyncio.to_thread(submit_burst)

        async def launchers() -> int:
            jobs = await asyncio.to_thread(rest.get, f"/apis/batch/v1/namespaces/{ns}/jobs")
            return len(jobs["items"])

        async def some_launchers() -> int:
            if election.done():
                raise ProbeAborted(f"the elector stopped before the usurper came: {election.exception()!r}")
            return await launchers()

        await async_wait_for(some_launchers, timeout=60, what="the burst under way", interval=0.02)

        lease_path = f"/apis/coordination.k8s.io/v1/namespaces/{ns}/leases/mpi-operator"
        lease = await asyncio.to_thread(rest.get, lease_path)
        now = dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
        lease["spec"].update({"holderIdentity": "usurper", "renewTime": now, "leaseDurationSeconds": 3600})
        await asyncio.to_thread(rest.request, "PUT", lease_path, lease)

        with pytest.raises(LeadershipLost):
            await asyncio.wait_for(election, 30)
        stepped_down = dt.datetime.now(dt.UTC)
        left_running = _started_since(before)
        launchers_when_deposed = await launchers()

        async def nothing_left_to_do() -> bool:
            # A deposed controller that kept its workers would now work off its queue: let it show.
            return not _started_since(before) or controller.queue_idle()

        await async_wait_for(nothing_left_to_do, timeout=60, what="the deposed controller idle or gone")
        # A write of the test's own, logged after anything the server received before it: the barrier.
        rest.create(f"/api/v1/namespaces/{ns}/configmaps", {"metadata": {"name": "barrier"}})

        async def barrier_logged() -> bool:
            return '"barrier"' in audited.log.read_text()

        await async_wait_for(barrier_logged, timeout=10, what="the barrier in the audit log")
        writes = operator_writes(audited.log)
        late = [w for w in writes if w.received >= stepped_down]

        assert 0 < launchers_when_deposed < JOBS, (
            "the lease must be lost mid-burst for the test to mean anything"
        )
        assert [w for w in writes if w.resource == "pods"], "the deposed leader wrote nothing at all"
        assert not late and not left_running, (
            f"{len(late)} writes after stepping down (first {late[:3]}); "
            f"{len(left_running)} tasks left running: {sorted(t.get_name() for t in left_running)}"
        )
    finally:
        election.cancel()
        with contextlib.suppress(BaseException):
            await election
        await client.close()
