"""Per-namespace series go with the namespace's last MPIJob, as a job's own series go with the job."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

from prometheus_client import CollectorRegistry

from mpioperator.clock import RealClock
from mpioperator.controller.controller import ControllerSettings, MPIJobController
from mpioperator.controller.metrics import RESULTS, JobMetrics
from mpioperator.kube.client import KubeClient
from mpioperator.testing.cluster import LocalCluster
from mpioperator.testing.mpijobs import mpijob
from mpioperator.testing.wait import async_wait_for

MPIJOBS = "/apis/kubeflow.org/v2beta1/namespaces/{}/mpijobs"


def _observe_durations(metrics: JobMetrics, namespace: str) -> None:
    """The histograms as jobs of `namespace` that ran and ended would have left them."""
    metrics.time_to_running.labels(namespace=namespace).observe(3)
    for result in RESULTS:
        metrics.job_duration.labels(namespace=namespace, result=result).observe(60)


def _namespace_series(registry: CollectorRegistry, namespace: str) -> list[str]:
    return sorted(
        f"{sample.name}{{{sample.labels.get('result', '')}}}"
        for family in registry.collect()
        if family.name in ("mpi_operator_job_time_to_running_seconds", "mpi_operator_job_duration_seconds")
        for sample in family.samples
        if sample.labels.get("namespace") == namespace and sample.name.endswith("_count")
    )


def _job_info(registry: CollectorRegistry, namespace: str, job: str) -> float | None:
    return registry.get_sample_value(
        "mpi_operator_job_info", {"launcher": f"{job}-launcher", "namespace": namespace}
    )


async def test_duration_histograms_of_a_namespace_go_with_its_last_mpijob_and_no_sooner(
    mpijob_crd: LocalCluster, make_namespace: Any
) -> None:
    emptied, kept = make_namespace(mpijob_crd), make_namespace(mpijob_crd)
    for namespace, name in ((emptied, "one"), (emptied, "two"), (kept, "stays")):
        mpijob_crd.rest.create(MPIJOBS.format(namespace), mpijob(name, workers=1))
    registry = CollectorRegistry()
    metrics = JobMetrics(registry)
    for namespace in (emptied, kept):
        _observe_durations(metrics, namespace)
    every_series = _namespace_series(registry, emptied)
    assert len(every_series) == 1 + len(RESULTS)
    client = KubeClient.from_kubeconfig(mpijob_crd.kubeconfig, qps=200, burst=400)
    controller = MPIJobController(
        client, metrics, settings=ControllerSettings(namespaces=(emptied, kept)), clock=RealClock()
    )
    stop = asyncio.Event()
    task = asyncio.ensure_future(controller.run(1, stop, drain_timeout=5))
    try:

        def info(job: str) -> Callable[[], Awaitable[float | None]]:
            async def probe() -> float | None:
                return _job_info(registry, emptied, job)

            return probe

        # The first syncs create the launchers, and with them each job's job_info series.
        for job in ("one", "two"):
            await async_wait_for(info(job), timeout=60, what=f"job_info of {job}")

        mpijob_crd.rest.delete(f"{MPIJOBS.format(emptied)}/one")
        await async_wait_for(
            info("one"), timeout=60, what="job_info of the deleted job gone", done=lambda v: v is None
        )
        assert _namespace_series(registry, emptied) == every_series  # "two" is still there

        mpijob_crd.rest.delete(f"{MPIJOBS.format(emptied)}/two")

        async def series() -> list[str]:
            return _namespace_series(registry, emptied)

        await async_wait_for(
            series, timeout=60, what="the emptied namespace's histograms gone", done=lambda s: not s
        )
        assert _namespace_series(registry, kept) == every_series
    finally:
        stop.set()
        await asyncio.wait_for(asyncio.gather(task, return_exceptions=True), 30)
        await client.close()
