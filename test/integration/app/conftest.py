"""The operator's own start-up (main.run) in-process against the session's API server."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from prometheus_client import CollectorRegistry

from mpioperator.app import main as app_main
from mpioperator.app import options as opts
from mpioperator.app.startup import make_client
from mpioperator.controller.watched import WATCHED
from mpioperator.kube.client import KubeClient
from mpioperator.testing.cluster import LocalCluster, wait_crd_established
from mpioperator.testing.wait import ProbeAborted, async_wait_for

MPIJOB_CRD = Path(__file__).resolve().parents[3] / "manifests" / "base" / "kubeflow.org_mpijobs.yaml"


@pytest.fixture(scope="module")
def with_mpijobs(apiserver_cluster: LocalCluster) -> LocalCluster:
    apiserver_cluster.kubectl("apply", "--server-side", "-f", str(MPIJOB_CRD))
    wait_crd_established(apiserver_cluster, "mpijobs.kubeflow.org")
    return apiserver_cluster


@dataclass
class Answered:
    """Every request the client made, once answered: (verb, resource, HTTP status)."""

    calls: list[tuple[str, str, int]] = field(default_factory=list)

    def observe(self, verb: str, resource: str, code: int, seconds: float) -> None:
        self.calls.append((verb, resource, code))

    def watching(self) -> set[str]:
        return {resource for verb, resource, code in self.calls if verb == "watch" and code == 200}


@dataclass
class RunningOperator:
    client: KubeClient
    answered: Answered
    task: asyncio.Future[int]

    def check_alive(self) -> None:
        """For probes: waiting is pointless once the operator has stopped (say why it did)."""
        if self.task.done():
            failure = None if self.task.cancelled() else self.task.exception()
            if failure is not None:
                raise ProbeAborted(f"the operator stopped: {type(failure).__name__}: {failure}") from failure
            raise ProbeAborted(
                f"the operator stopped: {'cancelled' if self.task.cancelled() else self.task.result()}"
            )


@contextlib.asynccontextmanager
async def operator_in_process(
    cluster: LocalCluster, namespace: str, *flags: str
) -> AsyncIterator[RunningOperator]:
    """main.run with the flags' own client, watching `namespace` (its Lease there too), until the block
    ends; entered once every informer's watch is open (it leads and its caches are filled)."""
    options = opts.parse(
        [
            f"--kubeConfig={cluster.kubeconfig}",
            f"--namespace={namespace}",
            f"--lock-namespace={namespace}",
            "--health-port=0",
            *flags,
        ],
        environ={},
    )
    answered = Answered()
    client = make_client(options, metrics=answered)
    stop = asyncio.Event()
    task = asyncio.ensure_future(
        app_main.run(options, client=client, stop=stop, registry=CollectorRegistry())
    )
    running = RunningOperator(client, answered, task)
    informers = {res.plural for res in WATCHED}
    try:

        async def watching() -> set[str]:
            running.check_alive()
            return answered.watching()

        await async_wait_for(watching, timeout=60, what="every informer watching", done=informers.issubset)
        yield running
    finally:
        stop.set()
        with contextlib.suppress(Exception):
            await asyncio.wait_for(asyncio.shield(task), 30)
