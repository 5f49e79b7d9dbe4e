"""The standby's lease-release watch survives a 403 (RBAC not yet synced after an API-server restart)."""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

from mpioperator.app.leases import KubeLeaseClient
from mpioperator.cache.backoff import Backoff
from mpioperator.clock import RealClock
from mpioperator.kube.client import KubeClient
from mpioperator.testing.cluster import LocalCluster
from mpioperator.testing.operator import service_account_token
from mpioperator.testing.wait import ProbeAborted, async_wait_for

LOCK = "mpi-operator"


async def test_the_release_watch_retries_after_a_403_and_sees_the_release_once_allowed(
    apiserver_cluster: LocalCluster, make_namespace: Any
) -> None:
    cluster = apiserver_cluster
    ns = make_namespace(cluster)
    cluster.rest.create(f"/api/v1/namespaces/{ns}/serviceaccounts", {"metadata": {"name": "standby"}})
    client = KubeClient.explicit(
        cluster.server, token=service_account_token(cluster, ns, "standby"), ca_file=str(cluster.ca_file)
    )
    clock = RealClock()
    backoff = Backoff(clock, initial=0.1, cap=0.5)
    releases_seen = 0

    async def follow() -> None:
        nonlocal releases_seen
        async for _ in KubeLeaseClient(client, clock=clock, backoff=backoff).releases(ns, LOCK):
            releases_seen += 1

    follower = asyncio.ensure_future(follow())
    try:

        async def refused_twice() -> bool:
            if follower.done():
                follower.result()
                raise ProbeAborted("the release watch gave up")
            return backoff.failures >= 2

        # No RBAC for the ServiceAccount yet: every watch is a 403, and the watch keeps trying.
        await async_wait_for(refused_twice, timeout=30, what="two refused watches, retried")

        cluster.rest.create(
            f"/apis/rbac.authorization.k8s.io/v1/namespaces/{ns}/roles",
            {
                "metadata": {"name": "leases"},
                "rules": [
                    {
                        "apiGroups": ["coordination.k8s.io"],
                        "resources": ["leases"],
                        "verbs": ["get", "list", "watch"],
                    }
                ],
            },
        )
        cluster.rest.create(
            f"/apis/rbac.authorization.k8s.io/v1/namespaces/{ns}/rolebindings",
            {
                "metadata": {"name": "leases"},
                "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "leases"},
                "subjects": [{"kind": "ServiceAccount", "name": "standby", "namespace": ns}],
            },
        )
        cluster.rest.create(
            f"/apis/coordination.k8s.io/v1/namespaces/{ns}/leases",
            {"metadata": {"name": LOCK}, "spec": {"leaseDurationSeconds": 15}},  # no holder: released
        )

        async def released_seen() -> bool:
            if follower.done():
                follower.result()
                raise ProbeAborted("the release watch gave up")
            return releases_seen >= 1

        await async_wait_for(released_seen, timeout=30, what="the release seen once the watch is allowed")
    finally:
        follower.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await follower
        await client.close()
