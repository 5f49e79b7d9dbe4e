"""What the operator's start-up costs in client-side tokens at the default --kube-api-qps 5 / burst 10.

The operator runs in-process (main's own start-up: flags, client, cluster checks, leader election,
controller) against a real API server, so the tokens each client's bucket handed out can be read.
"""

from __future__ import annotations

import asyncio
import contextlib
from pathlib import Path
from typing import Any

import pytest
from prometheus_client import CollectorRegistry

from mpioperator.app import main as app_main
from mpioperator.app import options as opts
from mpioperator.app.startup import WATCHED, make_client
from mpioperator.testing.cluster import LocalCluster, wait_crd_established
from mpioperator.testing.wait import ProbeAborted, async_wait_for

pytestmark = pytest.mark.integration

MPIJOB_CRD = Path(__file__).resolve().parents[3] / "manifests" / "base" / "kubeflow.org_mpijobs.yaml"


@pytest.fixture(scope="module")
def with_mpijobs(apiserver_cluster: LocalCluster) -> LocalCluster:
    apiserver_cluster.kubectl("apply", "--server-side", "-f", str(MPIJOB_CRD))
    wait_crd_established(apiserver_cluster, "mpijobs.kubeflow.org")
    return apiserver_cluster


class Answered:
    """Every request the client made, once answered: (verb, resource, HTTP status)."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, str, int]] = []

    def observe(self, verb: str, resource: str, code: int, seconds: float) -> None:
        self.calls.append((verb, resource, code))

    def watching(self) -> set[str]:
        return {resource for verb, resource, code in self.calls if verb == "watch" and code == 200}


async def test_start_up_at_the_default_qps_spends_tokens_on_lists_and_the_lease_only_and_never_waits(
    with_mpijobs: LocalCluster, make_namespace: Any
) -> None:
    cluster = with_mpijobs
    ns = make_namespace(cluster)
    options = opts.parse(
        [
            f"--kubeConfig={cluster.kubeconfig}",
            f"--namespace={ns}",
            f"--lock-namespace={ns}",
            "--health-port=0",
            # Renewals far apart, so none falls inside the start-up counted here.
            "--leader-elect-lease-duration=120",
            "--leader-elect-renew-deadline=90",
            "--leader-elect-retry-period=60",
        ],
        environ={},
    )
    assert (options.kube_api_qps, options.kube_api_burst) == (5.0, 10)
    answered = Answered()
    client = make_client(options, metrics=answered)
    stop = asyncio.Event()
    running = asyncio.ensure_future(
        app_main.run(options, client=client, stop=stop, registry=CollectorRegistry())
    )
    informers = {res.plural for res in WATCHED}
    try:

        async def watching() -> set[str]:
            if running.done():
                raise ProbeAborted(f"the operator stopped: {running.result()}")
            return answered.watching()

        # Every informer's watch open: the operator leads, its caches are filled, start-up is over.
        await async_wait_for(watching, timeout=60, what="every informer watching", done=informers.issubset)
        taken, waited = client.limiters.taken(), client.limiters.waited()
        unary = [(verb, resource) for verb, resource, _ in answered.calls if verb != "watch"]
    finally:
        stop.set()
        with contextlib.suppress(Exception):
            await asyncio.wait_for(running, 30)

    assert running.result() == 0
    # Kubernetes' client: the 5 cluster-check lists (pods, jobs, configmaps, secrets, services) and the
    # 5 informer lists of the same; the MPIJob client: 1 check and 1 informer list; the leader-election
    # client: get and create the Lease. The 6 informer watches (and the lease-release watch) take none.
    assert taken == {"kube": 10, "mpijob": 2, "leader-election": 2}
    assert len(unary) == 14
    assert sorted(verb for verb, resource in unary if resource == "leases") == ["create", "get"]
    # No bucket went past its burst, so no request of the start-up waited for a token.
    assert waited == {"kube": 0.0, "mpijob": 0.0, "leader-election": 0.0}
