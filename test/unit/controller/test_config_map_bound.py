"""The worker bounds are what the hostfile builder really writes: at --max-worker-replicas' default the
largest ConfigMap a job can have fits the API server's 1 MiB and one worker more does not; at the CRD's
maximum the smallest one fits and one more does not (the API server's side: test_worker_bound.py)."""

from __future__ import annotations

import pytest

from mpioperator.api import names
from mpioperator.api.objects import Obj
from mpioperator.controller.builders import configmap
from mpioperator.controller.builders.configmap import (
    DATA_LIMIT,
    Shape,
    data_size,
    largest_shape,
    max_worker_replicas,
    smallest_shape,
    worker_replicas_ceiling,
)
from test.unit.controller.jobs import reference_job


def job_of(workers: int, shape: Shape) -> Obj:
    job = reference_job(workers)
    job["metadata"].update(name="j" * shape.name, namespace="n" * shape.namespace)
    job["spec"].update(
        slotsPerWorker=int("9" * shape.slots),
        mpiImplementation="OpenMPI" if shape.openmpi else "Intel",
        runLauncherAsWorker=shape.launcher_as_worker,
    )
    return job


def built_size(workers: int, shape: Shape, domain: str) -> int:
    job = job_of(workers, shape)
    running = [
        {"metadata": {"name": names.worker_name(job, i)}, "status": {"phase": "Running"}}
        for i in range(workers)
    ]
    data = configmap.new_config_map(job, running, domain)["data"]
    return sum(len(value.encode()) for value in data.values())


@pytest.mark.parametrize("workers", [1, 9, 10, 11, 100, 101, 1234])
@pytest.mark.parametrize(
    ("shape", "domain"),
    [
        (Shape(3, 7, 0, 1, True, False), ""),
        (Shape(20, 63, 13, 10, True, True), "cluster.local"),
        (Shape(5, 2, 4, 3, False, True), "corp"),
        (Shape(1, 1, 0, 1, False, False), ""),
    ],
)
def test_data_size_is_what_the_builder_writes(workers: int, shape: Shape, domain: str) -> None:
    assert data_size(workers, shape) == built_size(workers, shape, domain)


@pytest.mark.parametrize("domain", ["", "cluster.local", "a" * 100])
def test_default_bound_is_the_most_workers_whose_largest_config_map_fits(domain: str) -> None:
    bound = max_worker_replicas(domain)
    assert built_size(bound, largest_shape(bound, domain), domain) <= DATA_LIMIT
    assert built_size(bound + 1, largest_shape(bound + 1, domain), domain) > DATA_LIMIT
    # The longest name leaves the last worker's hostname a 63-character label.
    last = names.worker_name(job_of(bound, largest_shape(bound, domain)), bound - 1)
    assert len(last) == 63


def test_ceiling_is_the_most_workers_whose_smallest_config_map_fits() -> None:
    ceiling = worker_replicas_ceiling()
    assert built_size(ceiling, smallest_shape(ceiling), "") <= DATA_LIMIT
    assert built_size(ceiling + 1, smallest_shape(ceiling + 1), "") > DATA_LIMIT
    assert max_worker_replicas("") < ceiling


@pytest.mark.parametrize(
    ("name", "index"),
    [
        ("pi-worker-0", 0),
        ("pi-worker-12", 12),
        ("pi-worker-012", None),
        ("pi-worker-", None),
        ("pi-worker-1a", None),
        ("pi-worker-²", None),
        ("pi-launcher", None),
        ("pix-worker-1", None),
    ],
)
def test_worker_index_is_the_inverse_of_worker_name(name: str, index: int | None) -> None:
    assert names.worker_index(reference_job(), name) == index
