"""The SDK's wait, logs, pods and events against a real API server. No operator or kubelet runs here: the
test writes the status and the pods they would write (the real operator and node are in test/e2e and
test/real)."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from mpioperator.client import (
    AsyncMPIJobClient,
    LauncherNotFound,
    MPIJobBuilder,
    MPIJobFailed,
    MPIJobNotFound,
    WaitTimeout,
    phase,
)
from mpioperator.testing.cluster import LocalCluster
from mpioperator.testing.wait import async_wait_for
from test.integration.client.conftest import set_status


def pi(name: str = "pi") -> dict[str, Any]:
    return MPIJobBuilder(name).image("mpioperator/mpi-pi:openmpi").workers(2).build()


def launcher_pod(ns: str, job: str) -> dict[str, Any]:
    labels = {
        "training.kubeflow.org/job-name": job,
        "training.kubeflow.org/job-role": "launcher",
        "training.kubeflow.org/replica-type": "launcher",
    }
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": f"{job}-launcher-abcde", "namespace": ns, "labels": labels},
        "spec": {"containers": [{"name": "launcher", "image": "mpioperator/mpi-pi:openmpi"}]},
    }


async def _waiting_for_a_new_pi(
    sdk: AsyncMPIJobClient, *, timeout: float
) -> tuple[list[str], asyncio.Future[dict[str, Any]]]:
    """Creates job `pi` and starts waiting for it: the phases `wait` reports as they come, and the wait."""
    await sdk.create(pi())
    phases: list[str] = []
    waiting = asyncio.ensure_future(
        sdk.wait("pi", timeout=timeout, on_change=lambda job: phases.append(phase(job)))
    )
    return phases, waiting


async def test_wait_returns_the_job_once_it_succeeded_and_reports_each_change(
    sdk: AsyncMPIJobClient, served: LocalCluster, ns: str
) -> None:
    phases, waiting = await _waiting_for_a_new_pi(sdk, timeout=60)

    async def seen(expected: str) -> bool:
        return expected in phases

    await async_wait_for(lambda: seen("Pending"), timeout=30, what="wait to report the job as it is")
    await asyncio.to_thread(set_status, served, ns, "pi", [("Created", "True"), ("Running", "True")])
    await async_wait_for(lambda: seen("Running"), timeout=30, what="wait to report Running")
    await asyncio.to_thread(
        set_status, served, ns, "pi", [("Created", "True"), ("Running", "False"), ("Succeeded", "True")]
    )
    finished = await asyncio.wait_for(waiting, timeout=30)

    assert phase(finished) == "Succeeded"
    assert phases == ["Pending", "Running", "Succeeded"]


async def test_wait_gives_up_after_its_timeout_naming_the_phase(sdk: AsyncMPIJobClient, ns: str) -> None:
    await sdk.create(pi())
    with pytest.raises(WaitTimeout, match=f"^MPIJob {ns}/pi still Pending after 1s$"):
        await sdk.wait("pi", timeout=1)


async def test_wait_that_times_out_names_the_phase_the_job_reached_meanwhile(
    sdk: AsyncMPIJobClient, served: LocalCluster, ns: str
) -> None:
    phases, waiting = await _waiting_for_a_new_pi(sdk, timeout=4)

    async def reported_pending() -> bool:
        return "Pending" in phases

    await async_wait_for(reported_pending, timeout=30, what="wait to report the job as it is")
    await asyncio.to_thread(set_status, served, ns, "pi", [("Created", "True"), ("Running", "True")])

    with pytest.raises(WaitTimeout, match=f"^MPIJob {ns}/pi still Running after 4s$"):
        await waiting


async def test_wait_returns_a_failed_job_or_raises_when_asked(
    sdk: AsyncMPIJobClient, served: LocalCluster, ns: str
) -> None:
    await sdk.create(pi())
    set_status(served, ns, "pi", [("Created", "True"), ("Failed", "True")])

    assert phase(await sdk.wait("pi", timeout=10)) == "Failed"
    with pytest.raises(
        MPIJobFailed, match=f"^MPIJob {ns}/pi failed: MPIJobFailed: MPIJob {ns}/pi is failed.$"
    ):
        await sdk.wait("pi", timeout=10, raise_on_failure=True)


async def test_wait_for_an_unknown_job_names_it(sdk: AsyncMPIJobClient, ns: str) -> None:
    with pytest.raises(MPIJobNotFound, match=f"^MPIJob {ns}/missing not found$"):
        await sdk.wait("missing", timeout=10)


async def test_wait_on_a_job_deleted_meanwhile_says_so(sdk: AsyncMPIJobClient, ns: str) -> None:
    await sdk.create(pi())
    waiting = asyncio.ensure_future(sdk.wait("pi", timeout=60))
    await asyncio.sleep(0)  # let wait read the job before it goes
    await async_wait_for(sdk.list, timeout=10, what="the job listed")
    await sdk.delete("pi")

    with pytest.raises(MPIJobNotFound, match=r"\(deleted while waiting\)$"):
        await asyncio.wait_for(waiting, timeout=30)


async def test_logs_before_the_launcher_exists_say_so(sdk: AsyncMPIJobClient, ns: str) -> None:
    await sdk.create(pi())
    with pytest.raises(LauncherNotFound, match=f"^MPIJob {ns}/pi has no launcher pod yet$"):
        await sdk.logs("pi")


async def test_logs_of_an_unknown_job_name_it(sdk: AsyncMPIJobClient, ns: str) -> None:
    with pytest.raises(MPIJobNotFound, match=f"^MPIJob {ns}/missing not found$"):
        await sdk.logs("missing")


async def test_logs_of_a_launcher_not_yet_on_a_node_are_empty_as_kubectl_shows_them(
    sdk: AsyncMPIJobClient, served: LocalCluster, ns: str
) -> None:
    await sdk.create(pi())
    served.rest.create(f"/api/v1/namespaces/{ns}/pods", launcher_pod(ns, "pi"))

    assert await sdk.logs("pi") == served.kubectl("-n", ns, "logs", "pi-launcher-abcde").stdout == ""


async def test_follow_logs_waits_no_longer_than_asked_for_a_launcher_to_start(
    sdk: AsyncMPIJobClient, served: LocalCluster, ns: str
) -> None:
    await sdk.create(pi())
    served.rest.create(f"/api/v1/namespaces/{ns}/pods", launcher_pod(ns, "pi"))

    with pytest.raises(LauncherNotFound, match=f"^MPIJob {ns}/pi has no started launcher after 2s$"):
        async for _ in sdk.follow_logs("pi", start_timeout=2):
            pass


async def test_pods_and_events_are_the_jobs_own(
    sdk: AsyncMPIJobClient, served: LocalCluster, ns: str
) -> None:
    job = await sdk.create(pi())
    await sdk.create(pi("other"))
    served.rest.create(f"/api/v1/namespaces/{ns}/pods", launcher_pod(ns, "pi"))
    served.rest.create(f"/api/v1/namespaces/{ns}/pods", launcher_pod(ns, "other"))
    for name, uid, reason in (("pi", job["metadata"]["uid"], "MPIJobCreated"), ("other", "x", "Elsewhere")):
        served.rest.create(
            f"/api/v1/namespaces/{ns}/events",
            {
                "metadata": {"name": f"{name}.1", "namespace": ns},
                "involvedObject": {"kind": "MPIJob", "name": name, "namespace": ns, "uid": uid},
                "reason": reason,
                "message": f"MPIJob {ns}/{name} is created.",
                "type": "Normal",
                "lastTimestamp": "2026-01-01T00:00:00Z",
            },
        )

    assert [p["metadata"]["name"] for p in await sdk.pods("pi")] == ["pi-launcher-abcde"]
    assert [e["reason"] for e in await sdk.events("pi")] == ["MPIJobCreated"]
