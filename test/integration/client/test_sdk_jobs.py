"""The SDK's create, get, list, watch, suspend, resume and delete against a real API server, and each bad
input answered by an exception that names the job and the problem."""

from __future__ import annotations

import asyncio
import contextlib
from pathlib import Path
from typing import Any

import pytest

from mpioperator.client import (
    AsyncMPIJobClient,
    InvalidMPIJob,
    MPIJobAlreadyExists,
    MPIJobBuilder,
    MPIJobClient,
    MPIJobNotFound,
    NamespaceNotFound,
)
from mpioperator.testing.cluster import LocalCluster
from mpioperator.testing.wait import async_wait_for
from test.integration.client.conftest import kubeconfig_with_namespace


def pi(name: str = "pi", workers: int = 2) -> dict[str, Any]:
    return MPIJobBuilder(name).image("mpioperator/mpi-pi:openmpi").workers(workers).build()


async def test_created_job_reads_back_as_built(sdk: AsyncMPIJobClient, ns: str) -> None:
    created = await sdk.create(pi())

    got = await sdk.get("pi")

    assert created["metadata"]["namespace"] == got["metadata"]["namespace"] == ns
    assert got["metadata"]["uid"] == created["metadata"]["uid"]
    assert got["spec"]["mpiReplicaSpecs"]["Worker"]["replicas"] == 2
    assert got["kind"] == "MPIJob" and got["apiVersion"] == "kubeflow.org/v2beta1"


async def test_list_is_oldest_first_and_all_namespaces_sees_other_namespaces(
    sdk: AsyncMPIJobClient, ns: str, served: LocalCluster, make_namespace: Any
) -> None:
    for name in ("first", "second"):
        await sdk.create(pi(name))
    other = make_namespace(served)
    await sdk.create(pi("elsewhere"), other)

    assert [j["metadata"]["name"] for j in await sdk.list()] == ["first", "second"]
    everywhere = {
        (j["metadata"]["namespace"], j["metadata"]["name"]) for j in await sdk.list(all_namespaces=True)
    }
    assert {(ns, "first"), (ns, "second"), (other, "elsewhere")} <= everywhere


async def test_creating_a_job_twice_names_it(sdk: AsyncMPIJobClient, ns: str) -> None:
    await sdk.create(pi())
    with pytest.raises(MPIJobAlreadyExists, match=f"^MPIJob {ns}/pi already exists$"):
        await sdk.create(pi())


async def test_unknown_job_names_namespace_and_name(sdk: AsyncMPIJobClient, ns: str) -> None:
    with pytest.raises(MPIJobNotFound, match=f"^MPIJob {ns}/missing not found$"):
        await sdk.get("missing")
    with pytest.raises(MPIJobNotFound, match=f"^MPIJob {ns}/missing not found$"):
        await sdk.suspend("missing")
    with pytest.raises(MPIJobNotFound, match=f"^MPIJob {ns}/missing not found$"):
        await sdk.delete("missing")


async def test_wrong_namespace_says_the_namespace_does_not_exist(sdk: AsyncMPIJobClient) -> None:
    with pytest.raises(
        MPIJobNotFound, match=r"^MPIJob no-such-ns/pi not found: namespace 'no-such-ns' does not exist$"
    ):
        await sdk.get("pi", "no-such-ns")
    with pytest.raises(NamespaceNotFound, match=r"^namespace 'no-such-ns' not found$"):
        await sdk.create(pi(), "no-such-ns")


async def test_what_the_crd_refuses_comes_back_with_the_servers_reasons(sdk: AsyncMPIJobClient) -> None:
    job = pi()
    job["spec"]["slotsPerWorker"] = -1  # past the builder's checks, as a hand-written dict would be

    with pytest.raises(InvalidMPIJob) as raised:
        await sdk.create(job)

    assert str(raised.value).startswith("MPIJob pi is invalid: ")
    assert "spec.slotsPerWorker" in str(raised.value)


async def test_only_mpijobs_are_submitted(sdk: AsyncMPIJobClient) -> None:
    with pytest.raises(InvalidMPIJob, match=r"expected kubeflow\.org/v2beta1 MPIJob, got apps/v1 Deployment"):
        await sdk.create({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"}})


async def test_suspend_and_resume_flip_run_policy_suspend(sdk: AsyncMPIJobClient) -> None:
    await sdk.create(pi())

    suspended = await sdk.suspend("pi")
    assert suspended["spec"]["runPolicy"]["suspend"] is True
    assert (await sdk.get("pi"))["spec"]["runPolicy"]["suspend"] is True

    resumed = await sdk.resume("pi")
    assert resumed["spec"]["runPolicy"]["suspend"] is False


async def test_deleted_job_is_gone_once_delete_returns_with_wait(sdk: AsyncMPIJobClient, ns: str) -> None:
    await sdk.create(pi())

    await sdk.delete("pi", wait=True, timeout=30)

    with pytest.raises(MPIJobNotFound):
        await sdk.get("pi")


async def test_watch_gives_existing_jobs_then_their_changes(sdk: AsyncMPIJobClient) -> None:
    await sdk.create(pi("watched"))
    seen: list[tuple[str, str, Any]] = []

    async def collect() -> None:
        async with contextlib.aclosing(sdk.watch("watched")) as events:
            async for event_type, job in events:
                seen.append(
                    (event_type, job["metadata"]["name"], job["spec"].get("runPolicy", {}).get("suspend"))
                )
                if event_type == "DELETED":
                    return

    watching = asyncio.ensure_future(collect())

    async def delivered() -> bool:
        return bool(seen)

    await async_wait_for(delivered, timeout=30, what="the watch to deliver the existing job")
    await sdk.create(pi("not-watched"))
    await sdk.suspend("watched")
    await sdk.delete("watched")
    await asyncio.wait_for(watching, timeout=30)

    assert seen[0] == ("ADDED", "watched", None)
    assert ("MODIFIED", "watched", True) in seen
    assert seen[-1][0] == "DELETED"
    assert all(name == "watched" for _, name, _ in seen)


def test_sync_client_takes_the_namespace_of_the_kubeconfig_context(
    served: LocalCluster, ns: str, tmp_path: Path
) -> None:
    kubeconfig = kubeconfig_with_namespace(served, ns, tmp_path / "config")

    with MPIJobClient(kubeconfig) as client:
        assert client.namespace == ns
        client.create(pi("synced"))
        assert [j["metadata"]["name"] for j in client.list()] == ["synced"]
        assert client.get("synced")["metadata"]["namespace"] == ns


def test_sync_client_without_a_context_namespace_uses_default(served: LocalCluster) -> None:
    with MPIJobClient(served.kubeconfig) as client:
        assert client.namespace == "default"
