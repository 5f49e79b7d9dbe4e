"""What the users of the seed systems type, on a real API server (the single-sync harness of
test_upstream_sync_scenarios.py: the test plays kubelet and the Job controller)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest_asyncio

from mpioperator.testing.cluster import LocalCluster
from mpioperator.testing.mpijobs import mpijob
from test.integration.controller.test_upstream_sync_scenarios import ALL, Scene, informers_only


@pytest_asyncio.fixture
async def scene(mpijob_crd: LocalCluster, make_namespace: Any) -> AsyncIterator[Scene]:
    async with informers_only(mpijob_crd, make_namespace(mpijob_crd)) as h:
        yield Scene(h)


def kubectl_names(scene: Scene, selector: str) -> list[str]:
    result = scene.cluster.kubectl("get", "pods", "-n", scene.ns, "-l", selector, "-o", "name")
    return sorted(result.stdout.split())


async def test_kubeflow_docs_launcher_selector_finds_the_launcher_pod(scene: Scene) -> None:
    """Kubeflow's docs find the launcher with `kubectl get pods -l mpi_job_name=<job>,mpi_role_type=launcher
    -o name`; the same labels with `worker` find the workers, and another job's pods are not found."""
    scene.submit(mpijob("bench", workers=2, run_policy=ALL))
    scene.submit(mpijob("other", workers=1, run_policy=ALL))
    await scene.sync("bench")
    await scene.sync("other")
    scene.set_workers("bench", "Running", ready=True)
    scene.set_workers("other", "Running", ready=True)
    await scene.sync("bench")
    await scene.sync("other")
    launcher = scene.create_launcher_pod("bench", phase="Running")
    scene.create_launcher_pod("other", phase="Running")

    assert kubectl_names(scene, "mpi_job_name=bench,mpi_role_type=launcher") == [f"pod/{launcher}"]
    assert kubectl_names(scene, "mpi_job_name=bench,mpi_role_type=worker") == [
        "pod/bench-worker-0",
        "pod/bench-worker-1",
    ]


async def test_legacy_labels_leave_discover_hosts_and_the_service_selector_as_upstream(scene: Scene) -> None:
    """The extra labels select nothing of ours: the Service still selects by upstream's labels and
    discover_hosts.sh lists exactly the job's running workers."""
    scene.submit(mpijob("hosts", workers=2, run_policy=ALL))
    await scene.sync("hosts")
    scene.set_workers("hosts", "Running", ready=True)
    await scene.sync("hosts")

    service = scene.get("services", "hosts")
    assert service is not None
    assert service["spec"]["selector"] == {
        "training.kubeflow.org/operator-name": "mpi-operator",
        "training.kubeflow.org/job-name": "hosts",
    }
    config = scene.get("configmaps", "hosts-config")
    assert config is not None
    assert config["data"]["discover_hosts.sh"] == "#!/bin/sh\n" + "".join(
        f"echo hosts-worker-{i}.hosts.{scene.ns}.svc\n" for i in range(2)
    )
