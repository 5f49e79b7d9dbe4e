"""The bound on Worker.replicas against a real API server: a job above --max-worker-replicas is Invalid
with one event and makes nothing, and the ConfigMap of a job at the bound, with the longest names
the API allows, is one the API server stores (docs/extensions.md, docs/install.md)."""

from __future__ import annotations

from typing import Any

import pytest

from mpioperator.api.objects import Obj
from mpioperator.controller.builders import configmap
from mpioperator.testing.cluster import LocalCluster
from mpioperator.testing.mpijobs import mpijob
from mpioperator.testing.rest import RestError
from test.integration.controller.actors import Actors
from test.integration.controller.conftest import Harness, running_controller
from test.integration.controller.waits import condition_appears

LONGEST_LABEL = 63  # a namespace is a DNS-1123 label
INT32_MAX = 2**31 - 1


def syncs(h: Harness) -> float:
    """How many syncs the controller has finished, whatever their result."""
    return sum(
        h.registry.get_sample_value("mpi_operator_reconcile_duration_seconds_count", {"result": result})
        or 0.0
        for result in ("success", "error")
    )


async def test_job_above_the_flag_is_invalid_with_one_event_and_makes_no_child(
    mpijob_crd: LocalCluster, make_namespace: Any
) -> None:
    ns = make_namespace(mpijob_crd)
    async with running_controller(mpijob_crd, ns, settings={"max_worker_replicas": 2}) as h:
        a = Actors(mpijob_crd, ns)
        a.submit(mpijob("big", workers=3))
        invalid = await condition_appears(a, "big", "Invalid", "the job above the bound marked Invalid")
        assert invalid["status"] == "True"
        assert (
            "spec.mpiReplicaSpecs[Worker].replicas: Invalid value: 3: must be less than or equal to 2"
            in (invalid["message"])
        )
        # An edit that leaves it as invalid as it was: synced again, it says nothing new.
        before = syncs(h)
        a.patch_spec("big", {"slotsPerWorker": 2})
        await a.until_true(lambda: syncs(h) > before, "the edited job synced")

        assert a.event_reasons("big") == ["ValidationError"]
        for kind in ("pods", "services", "configmaps", "secrets", "jobs"):
            made = [o["metadata"]["name"] for o in a.items(kind) if o["metadata"]["name"].startswith("big")]
            assert made == [], kind


def longest_job(namespace: str, workers: int) -> Obj:
    """The name as long as the CRD lets it be for `workers` workers, in `namespace`, as many slots as an
    int32 holds, the launcher a worker too, Open MPI's hostfile lines: the largest ConfigMap there is."""
    name = "a" * (LONGEST_LABEL - len(f"-worker-{workers - 1}"))
    job = mpijob(name, workers=workers, spec={"slotsPerWorker": INT32_MAX, "runLauncherAsWorker": True})
    job["metadata"]["namespace"] = namespace
    return job


def running_workers(job: Obj, workers: int) -> list[Obj]:
    ns = job["metadata"]["namespace"]
    name = job["metadata"]["name"]
    return [
        {"metadata": {"name": f"{name}-worker-{i}", "namespace": ns}, "status": {"phase": "Running"}}
        for i in range(workers)
    ]


def create_config_map(cluster: LocalCluster, job: Obj, workers: int, domain: str) -> RestError | None:
    body = configmap.new_config_map(job, running_workers(job, workers), domain)
    body["metadata"].pop("ownerReferences")  # the MPIJob is not stored: only the ConfigMap is tried
    ns = job["metadata"]["namespace"]
    try:
        cluster.rest.create(f"/api/v1/namespaces/{ns}/configmaps", body)
    except RestError as err:
        return err
    return None


@pytest.mark.parametrize("domain", ["", "cluster.local"])
def test_config_map_of_a_job_at_the_bound_with_the_longest_names_is_stored_and_one_more_is_not(
    mpijob_crd: LocalCluster, domain: str
) -> None:
    namespace = ("d" if domain else "n") * LONGEST_LABEL  # one of its own per case: the names repeat
    mpijob_crd.kubectl("create", "namespace", namespace, check=False)
    bound = configmap.max_worker_replicas(domain)

    at_bound = longest_job(namespace, bound)
    assert create_config_map(mpijob_crd, at_bound, bound, domain) is None

    # The bound is the largest that fits: one worker more, and the API server refuses the ConfigMap.
    above = longest_job(namespace, bound + 1)
    above["metadata"]["name"] = "b" + above["metadata"]["name"][1:]
    refused = create_config_map(mpijob_crd, above, bound + 1, domain)
    assert refused is not None and refused.status == 422, refused
    assert "Too long" in str(refused) or "must have at most" in str(refused), refused
