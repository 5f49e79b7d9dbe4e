"""What the users of the seed systems type, on a real API server (the single-sync harness of
test_upstream_sync_scenarios.py: the test plays kubelet and the Job controller)."""

from __future__ import annotations

import base64
from collections.abc import AsyncIterator
from typing import Any

import pytest_asyncio

from mpioperator.api.objects import Obj
from mpioperator.controller.builders.secret import new_key_pair
from mpioperator.testing.cluster import LocalCluster
from mpioperator.testing.mpijobs import mpijob
from test.integration.controller.actors import job_selector
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
    assert service["spec"]["selector"] == job_selector("hosts")
    config = scene.get("configmaps", "hosts-config")
    assert config is not None
    assert config["data"]["discover_hosts.sh"] == "#!/bin/sh\n" + "".join(
        f"echo hosts-worker-{i}.hosts.{scene.ns}.svc\n" for i in range(2)
    )


def prototype_secret(name: str) -> Obj:
    """The Secret of the openmpi prototype's README: `kubectl create secret generic <name>
    --from-file=id_rsa=... --from-file=id_rsa.pub=... --from-file=authorized_keys=...`."""
    private, public = new_key_pair()
    files = {"id_rsa": private, "id_rsa.pub": public, "authorized_keys": public}
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": name},
        "type": "Opaque",
        "data": {k: base64.b64encode(v).decode() for k, v in files.items()},
    }


async def _launched(scene: Scene, body: Obj, *, refusal: str) -> Obj:
    """Submits `body` and syncs it once: the sync makes its launcher Job, sets no `refusal` condition,
    and the launcher Job is returned."""
    name = body["metadata"]["name"]
    scene.submit(body)

    writes = await scene.sync(name)

    assert ("create", "jobs", f"{name}-launcher") in writes
    assert scene.condition(name, refusal) is None
    launcher = scene.launcher_job(name)
    assert launcher is not None
    return launcher


async def test_openmpi_prototype_secret_and_hostfile_path_are_mounted_where_its_exec_line_looks(
    scene: Scene,
) -> None:
    """The prototype's Secret (id_rsa, id_rsa.pub, authorized_keys) is accepted as it is and mounted key by
    key; `mpioperator.io/hostfile-path` puts the job's hostfile at /kubeflow/openmpi/assets/hostfile too."""
    scene.rest.create(scene.path("secrets"), prototype_secret("openmpi-secret"))
    body = mpijob(
        "proto",
        workers=2,
        run_policy=ALL,
        annotations={
            "mpioperator.io/ssh-secret": "openmpi-secret",
            "mpioperator.io/hostfile-path": "/kubeflow/openmpi/assets/hostfile",
        },
    )
    launcher = await _launched(scene, body, refusal="SSHSecretInvalid")
    specs = [launcher["spec"]["template"]["spec"], *(p["spec"] for p in scene.worker_pods("proto"))]
    assert len(specs) == 3
    for spec in specs:
        (volume,) = [v for v in spec["volumes"] if v["name"] == "ssh-auth"]
        assert volume["secret"]["secretName"] == "openmpi-secret"
        assert [(i["key"], i["path"]) for i in volume["secret"]["items"]] == [
            ("id_rsa", "id_rsa"),
            ("id_rsa.pub", "id_rsa.pub"),
            ("authorized_keys", "authorized_keys"),
        ]
    template = launcher["spec"]["template"]["spec"]
    (hostfile,) = [v for v in template["volumes"] if v["name"] == "mpi-job-hostfile"]
    assert hostfile["configMap"]["name"] == "proto-config"
    assert hostfile["configMap"]["items"] == [{"key": "hostfile", "path": "hostfile", "mode": 0o444}]
    mounts = {m["name"]: m["mountPath"] for m in template["containers"][0]["volumeMounts"]}
    assert mounts["mpi-job-hostfile"] == "/kubeflow/openmpi/assets"
    assert mounts["mpi-job-config"] == "/etc/mpi"
    assert scene.names("secrets") == ["openmpi-secret"]
    await scene.assert_converged("proto")


async def test_a_hostfile_path_that_would_cover_upstreams_mounts_is_a_validation_error(scene: Scene) -> None:
    body = mpijob(
        "over", workers=1, run_policy=ALL, annotations={"mpioperator.io/hostfile-path": "/etc/mpi/hosts"}
    )
    scene.submit(body)

    assert await scene.sync("over") == [("update_status", "mpijobs", "over")]

    invalid = scene.condition("over", "Invalid")
    assert invalid is not None and invalid["reason"] == "ValidationError"
    assert "metadata.annotations[mpioperator.io/hostfile-path]" in invalid["message"]
    assert "would overlap /etc/mpi" in invalid["message"]
    assert scene.names("pods") == [] and scene.names("jobs") == []


async def test_t9k_relative_program_runs_in_the_launchers_working_dir(scene: Scene) -> None:
    """T9k's `cmd: ./random_walk` with a `workingDir`: the generated mpirun line names the program in that
    directory, as a shell there would, and the event says the line."""
    body = mpijob("walk", workers=2, run_policy=ALL)
    container = body["spec"]["mpiReplicaSpecs"]["Launcher"]["template"]["spec"]["containers"][0]
    del container["command"], container["args"]
    container["workingDir"] = "/workspace/random-walk"
    body["metadata"]["annotations"] = {"mpioperator.io/launcher-program": "./random_walk 1000 10"}
    launcher = await _launched(scene, body, refusal="Invalid")
    line = "mpirun --hostfile /etc/mpi/hostfile -np 2 /workspace/random-walk/random_walk 1000 10"
    assert launcher["spec"]["template"]["spec"]["containers"][0]["args"] == line.split()
    generated = [e for e in scene.recorded("walk") if e[1] == "LauncherCommandGenerated"]
    assert generated == [("Normal", "LauncherCommandGenerated", f"Launcher walk-launcher runs: {line}")]


async def test_a_running_pod_not_of_the_job_but_with_its_worker_labels_is_never_one_of_its_hosts(
    scene: Scene,
) -> None:
    """Ours (decisions-local L36): upstream lists in discover_hosts.sh every Running pod with the job's
    worker labels (upstream-behaviour.md: "It does not check ownership"); a pod the job does not control
    is never listed here, whatever its index. Past the replicas it is still deleted, as upstream does."""
    scene.submit(mpijob("side", workers=2, run_policy=ALL))
    await scene.sync("side")
    scene.set_workers("side", "Running", ready=True)
    await scene.sync("side")
    workers = "".join(f"echo side-worker-{i}.side.{scene.ns}.svc\n" for i in range(2))
    for name, index in (("stranger", "1"), ("surplus", "5")):
        labels = {
            **job_selector("side"),
            "training.kubeflow.org/job-role": "worker",
            "training.kubeflow.org/replica-index": index,
        }
        pod = {
            "metadata": {"name": name, "labels": labels},
            "spec": {"containers": [{"name": "c", "image": "x"}]},
        }
        scene.rest.create(scene.path("pods"), pod)
        scene.set_pod(name, "Running", ready=True)

    assert await scene.sync("side") == [("delete", "pods", "surplus")]
    config = scene.get("configmaps", "side-config")
    assert config is not None
    assert config["data"]["discover_hosts.sh"] == f"#!/bin/sh\n{workers}"

    assert await scene.sync("side") == []
    assert scene.get("pods", "stranger") is not None
