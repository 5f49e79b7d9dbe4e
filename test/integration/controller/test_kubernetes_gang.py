"""--gang-scheduling=GangScheduling on a real API server serving Kubernetes' Workload API
(scheduling.k8s.io/v1alpha2): the Workload and PodGroup are accepted, owned by the job, linked from
its pods, and deleted on suspend and completion."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest
import pytest_asyncio

from mpioperator.api.objects import Obj
from mpioperator.testing.cluster import LocalCluster
from test.integration.controller.conftest import Harness, running_controller, with_mpijob_crd
from test.integration.controller.test_gang_scheduling import (
    GangActors,
    assert_running_job_resyncs_without_writes,
    gang_job,
    owner_of,
)

ROOT = "/apis/scheduling.k8s.io/v1alpha2"


@pytest.fixture(scope="session")
def workload_api(workload_api_cluster: LocalCluster) -> LocalCluster:
    return with_mpijob_crd(workload_api_cluster)


@pytest_asyncio.fixture
async def native(workload_api: LocalCluster, make_namespace: Any) -> AsyncIterator[Harness]:
    namespace = make_namespace(workload_api)
    async with running_controller(workload_api, namespace, gang_scheduling="GangScheduling") as running:
        yield running


def reconcile_errors(h: Harness) -> float:
    return h.registry.get_sample_value("mpi_operator_reconcile_errors_total") or 0.0


class WorkloadActors(GangActors):
    def __init__(self, h: Harness) -> None:
        super().__init__(h, ROOT)

    def workload(self, name: str) -> Obj | None:
        found = self.items_at(f"{ROOT}/namespaces/{self.ns}/workloads")
        return next((w for w in found if w["metadata"]["name"] == name), None)

    def items_at(self, path: str) -> list[Obj]:
        items: list[Obj] = self.rest.get(path)["items"]
        return items


async def test_workload_and_pod_group_are_made_owned_and_linked_from_every_pod(native: Harness) -> None:
    a = WorkloadActors(native)
    a.submit(gang_job("gang", workers=4))

    pod_group = await a.wait_pod_group("gang")
    assert owner_of(pod_group)["kind"] == "MPIJob" and owner_of(pod_group)["name"] == "gang"
    assert pod_group["spec"]["schedulingPolicy"] == {"gang": {"minCount": 5}}
    assert pod_group["spec"]["podGroupTemplateRef"] == {
        "workload": {"workloadName": "gang", "podGroupTemplateName": "mpijob"}
    }
    workload = a.workload("gang")
    assert workload is not None
    assert owner_of(workload)["name"] == "gang"
    assert workload["spec"]["controllerRef"] == {"apiGroup": "kubeflow.org", "kind": "MPIJob", "name": "gang"}
    [template] = workload["spec"]["podGroupTemplates"]
    assert template["name"] == "mpijob"
    assert template["schedulingPolicy"] == {"gang": {"minCount": 5}}

    await a.until_true(lambda: len(a.worker_pods("gang")) == 4, "four workers")
    for pod in a.worker_pods("gang"):
        # The API server keeps the link (it drops the field when GenericWorkload is off).
        assert pod["spec"]["schedulingGroup"] == {"podGroupName": "gang"}
        assert pod["spec"]["schedulerName"] == "default-scheduler"
    await a.until(lambda: a.launcher_job("gang"), "launcher Job")
    assert a.launcher_template("gang")["spec"]["schedulingGroup"] == {"podGroupName": "gang"}


async def test_wait_for_workers_ready_gang_counts_the_workers_and_the_launcher_joins_it(
    native: Harness,
) -> None:
    a = WorkloadActors(native)
    a.submit(gang_job("wait", spec={"launcherCreationPolicy": "WaitForWorkersReady"}))
    pod_group = await a.wait_pod_group("wait")
    # A launcher member would never arrive before the workers are Ready: the gang is the workers.
    assert pod_group["spec"]["schedulingPolicy"] == {"gang": {"minCount": 2}}
    await a.until_true(lambda: len(a.worker_pods("wait")) == 2, "two workers")
    assert a.launcher_job("wait") is None

    a.set_workers("wait", "Running", ready=True)
    await a.until(lambda: a.launcher_job("wait"), "launcher Job once workers are Ready")
    assert a.launcher_template("wait")["spec"]["schedulingGroup"] == {"podGroupName": "wait"}
    await a.until_true(lambda: native.controller.queue_idle(), "the work queue to drain")
    # Immutable in the API, and the workers already meet the quorum the launcher pod joins.
    assert a.pod_group_spec("wait")["schedulingPolicy"] == {"gang": {"minCount": 2}}


async def test_suspend_deletes_the_gang_and_resume_makes_it_again(native: Harness) -> None:
    a = WorkloadActors(native)
    a.submit(gang_job("sus"))
    first = await a.wait_pod_group("sus")
    await a.until_true(lambda: len(a.worker_pods("sus")) == 2, "workers")

    a.patch_spec("sus", {"spec": {"runPolicy": {"suspend": True}}})
    await a.until_true(lambda: a.pod_group("sus") is None, "PodGroup deleted on suspend")
    await a.until_true(lambda: a.workload("sus") is None, "Workload deleted on suspend")

    a.patch_spec("sus", {"spec": {"runPolicy": {"suspend": False}}})
    again = await a.wait_pod_group("sus")
    assert again["metadata"]["uid"] != first["metadata"]["uid"]
    assert a.workload("sus") is not None
    await a.until_true(lambda: len(a.worker_pods("sus")) == 2, "workers on resume")


async def test_completion_deletes_the_workload_and_its_pod_group(native: Harness) -> None:
    a = WorkloadActors(native)
    a.submit(gang_job("fin"))
    await a.wait_pod_group("fin")
    await a.until(lambda: a.launcher_job("fin"), "launcher Job")

    a.set_launcher_job("fin", "Complete")
    await a.until_true(lambda: a.condition("fin", "Succeeded") is not None, "Succeeded")
    await a.until_true(lambda: a.pod_group("fin") is None, "PodGroup deleted on completion")
    await a.until_true(lambda: a.workload("fin") is None, "Workload deleted on completion")


async def test_workload_owned_by_someone_else_is_refused_and_no_worker_is_made(native: Harness) -> None:
    a = WorkloadActors(native)
    a.rest.create(
        f"{ROOT}/namespaces/{a.ns}/workloads",
        {
            "apiVersion": "scheduling.k8s.io/v1alpha2",
            "kind": "Workload",
            "metadata": {"name": "taken"},
            "spec": {"podGroupTemplates": [{"name": "other", "schedulingPolicy": {"basic": {}}}]},
        },
    )
    a.submit(gang_job("taken"))
    await a.until_true(lambda: "ErrResourceExists" in a.event_reasons("taken"), "ErrResourceExists event")
    event = next(e for e in a.events("taken") if e["reason"] == "ErrResourceExists")
    assert (
        event["message"] == 'Resource "taken" of Kind "Workload" already exists and is not managed by MPIJob'
    )
    assert a.pod_group("taken") is None
    assert a.worker_pods("taken") == []


async def test_resume_waits_for_a_pod_group_still_held_by_a_finalizer(native: Harness) -> None:
    a = WorkloadActors(native)
    a.submit(gang_job("held"))
    first = await a.wait_pod_group("held")
    await a.until_true(lambda: len(a.worker_pods("held")) == 2, "workers")
    # kube-controller-manager's podgroup-protection finalizer holds a PodGroup while its pods run; this
    # API server runs no such controller, so a finalizer of the test's own stands in for it.
    path = f"{ROOT}/namespaces/{a.ns}/podgroups/held"
    a.rest.merge_patch(path, {"metadata": {"finalizers": ["test.mpioperator.io/hold"]}})

    a.patch_spec("held", {"spec": {"runPolicy": {"suspend": True}}})
    await a.until_true(
        lambda: bool((a.pod_group("held") or {}).get("metadata", {}).get("deletionTimestamp")),
        "PodGroup deleted on suspend, held by the finalizer",
    )
    await a.until_true(lambda: a.worker_pods("held") == [], "workers deleted on suspend")
    errors_before = reconcile_errors(native)
    a.patch_spec("held", {"spec": {"runPolicy": {"suspend": False}}})
    # The resume's sync refuses to make workers for a gang still going, and is retried.
    await a.until_true(lambda: reconcile_errors(native) > errors_before, "the resume's sync to wait")
    assert a.worker_pods("held") == [], "workers made while the old gang was still going"
    held = a.pod_group("held")
    assert held is not None and held["metadata"]["uid"] == first["metadata"]["uid"]

    a.rest.merge_patch(path, {"metadata": {"finalizers": None}})

    def new_pod_group() -> Obj | None:
        found = a.pod_group("held")
        return found if found and found["metadata"]["uid"] != first["metadata"]["uid"] else None

    again = await a.until(new_pod_group, "a new PodGroup once the old one is gone")
    assert again is not None
    assert again["spec"]["schedulingPolicy"] == {"gang": {"minCount": 3}}
    await a.until_true(lambda: len(a.worker_pods("held")) == 2, "workers on resume")


async def test_converged_job_sync_makes_no_api_write(native: Harness) -> None:
    a = WorkloadActors(native)
    a.submit(gang_job("quiet"))
    await a.until(lambda: a.launcher_job("quiet"), "launcher Job")
    await assert_running_job_resyncs_without_writes(native, a, "quiet")


async def test_a_deleted_pod_group_is_made_again_from_the_workload_still_there(native: Harness) -> None:
    a = WorkloadActors(native)
    a.submit(gang_job("back"))
    first = await a.wait_pod_group("back")
    workload = a.workload("back")
    assert workload is not None
    await a.until_true(lambda: native.controller.queue_idle(), "the work queue to drain")

    # Nothing about the MPIJob changes: only the PodGroup's own delete event can trigger this sync.
    a.rest.delete(f"{ROOT}/namespaces/{a.ns}/podgroups/back")

    def new_pod_group() -> Obj | None:
        found = a.pod_group("back")
        return found if found and found["metadata"]["uid"] != first["metadata"]["uid"] else None

    again = await a.until(new_pod_group, "the PodGroup made again")
    assert again is not None and owner_of(again)["name"] == "back"
    kept = a.workload("back")
    assert kept is not None and kept["metadata"]["uid"] == workload["metadata"]["uid"]
