"""What the operator's client-side limits cost it at upstream's --kube-api-qps 5 / burst 10 (client-go's
defaults, which a user moving from upstream may have kept in their flags; ours are 50 and 100): the tokens
of its start-up, and whether a burst of writes can hold back the leader's lease renewal."""

from __future__ import annotations

import asyncio
from typing import Any

from mpioperator.testing.cluster import LocalCluster
from mpioperator.testing.mpijobs import mpijob
from mpioperator.testing.wait import async_wait_for
from test.integration.app.conftest import operator_in_process

# Renewals far apart, so none falls inside the start-up counted.
RARE_RENEWALS = (
    "--leader-elect-lease-duration=120",
    "--leader-elect-renew-deadline=90",
    "--leader-elect-retry-period=60",
)
UPSTREAMS_LIMITS = ("--kube-api-qps=5", "--kube-api-burst=10")


async def test_start_up_at_upstreams_qps_spends_tokens_on_lists_and_the_lease_only_and_never_waits(
    with_mpijobs: LocalCluster, make_namespace: Any
) -> None:
    async with operator_in_process(
        with_mpijobs, make_namespace(with_mpijobs), *RARE_RENEWALS, *UPSTREAMS_LIMITS
    ) as operator:
        limiters = operator.client.limiters
        assert (limiters.qps, limiters.burst) == (5.0, 10)
        taken, waited = limiters.taken(), limiters.waited()
        unary = [(verb, resource) for verb, resource, _ in operator.answered.calls if verb != "watch"]
    assert operator.task.result() == 0

    # Kubernetes' client: the 5 informer lists (pods, jobs, configmaps, secrets, services); the MPIJob
    # client: 1 informer list; the leader-election client: get and create the Lease. The 6 cluster-check
    # lists of the same go through a bucket of their own (startup.py), and the 6 informer watches (and
    # the lease-release watch) take none.
    assert taken == {"kube": 5, "mpijob": 1, "leader-election": 2}
    assert len(unary) == 14
    assert sorted(verb for verb, resource in unary if resource == "leases") == ["create", "get"]
    # No bucket went past its burst, so no request of the start-up waited for a token.
    assert waited == {"kube": 0.0, "mpijob": 0.0, "leader-election": 0.0}


async def test_a_burst_of_creates_at_upstreams_qps_leaves_the_lease_renewed_on_time(
    with_mpijobs: LocalCluster, make_namespace: Any
) -> None:
    """40 workers and the job's other children queue about 9 s of Kubernetes-client tokens at 5/s,
    longer than the 5 s renew deadline; a renewal queued behind them would lose the Lease (and the
    process), as it did with one bucket for everything."""
    cluster, workers = with_mpijobs, 40
    ns = make_namespace(cluster)
    lease_path = f"/apis/coordination.k8s.io/v1/namespaces/{ns}/leases/mpi-operator"
    async with operator_in_process(cluster, ns, *UPSTREAMS_LIMITS) as operator:
        held = await asyncio.to_thread(cluster.rest.get, lease_path)
        before = operator.client.limiters.taken()["kube"]
        await asyncio.to_thread(
            cluster.rest.create,
            f"/apis/kubeflow.org/v2beta1/namespaces/{ns}/mpijobs",
            mpijob("big", workers=workers),
        )

        async def worker_pods() -> int:
            operator.check_alive()
            pods = await asyncio.to_thread(cluster.rest.get, f"/api/v1/namespaces/{ns}/pods")
            return sum(1 for p in pods["items"] if p["metadata"]["name"].startswith("big-worker-"))

        await async_wait_for(
            worker_pods, timeout=60, what=f"{workers} worker pods", done=lambda n: n == workers
        )
        operator.check_alive()
        renewed = await asyncio.to_thread(cluster.rest.get, lease_path)
        # The pods alone took 40 tokens: at 5/s past a burst of 10, the last waited 6 s or more.
        assert operator.client.limiters.taken()["kube"] - before >= workers
    assert operator.task.result() == 0
    assert renewed["spec"]["holderIdentity"] == held["spec"]["holderIdentity"]
    assert renewed["spec"]["renewTime"] > held["spec"]["renewTime"]
    assert operator.client.limiters.waited()["leader-election"] == 0.0
