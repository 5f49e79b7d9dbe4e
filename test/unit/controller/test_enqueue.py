"""Which events wait before their MPIJob is synced (decisions-local L6)."""

from __future__ import annotations

import pytest

from mpioperator.api.objects import Obj
from mpioperator.controller.enqueue import launcher_pod_ended, spec_changed


def _job(generation: int, resource_version: str) -> Obj:
    return {"metadata": {"name": "pi", "generation": generation, "resourceVersion": resource_version}}


def _pod(owner_kind: str, owner_api_version: str, phase: str, *, controller: bool = True) -> Obj:
    ref = {
        "apiVersion": owner_api_version,
        "kind": owner_kind,
        "name": "pi-launcher",
        "controller": controller,
    }
    return {"metadata": {"name": "p", "ownerReferences": [ref]}, "status": {"phase": phase}}


def test_a_status_write_is_not_a_spec_change() -> None:
    assert not spec_changed(_job(3, "100"), _job(3, "101"))


def test_a_new_generation_is_a_spec_change() -> None:
    assert spec_changed(_job(3, "100"), _job(4, "101"))


@pytest.mark.parametrize("phase", ["Succeeded", "Failed"])
def test_a_finished_pod_of_a_batch_job_is_a_launcher_end(phase: str) -> None:
    assert launcher_pod_ended(_pod("Job", "batch/v1", phase))


@pytest.mark.parametrize("phase", ["Pending", "Running", "Unknown", ""])
def test_an_unfinished_launcher_pod_is_not_an_end(phase: str) -> None:
    assert not launcher_pod_ended(_pod("Job", "batch/v1", phase))


def test_a_finished_worker_pod_is_not_a_launcher_end() -> None:
    # Workers are controlled by the MPIJob itself; their failures must be seen at once.
    assert not launcher_pod_ended(_pod("MPIJob", "kubeflow.org/v2beta1", "Failed"))


def test_a_job_kind_of_another_group_or_a_non_controller_owner_is_not_a_launcher_end() -> None:
    assert not launcher_pod_ended(_pod("Job", "example.com/v1", "Succeeded"))
    assert not launcher_pod_ended(_pod("Job", "batch/v1", "Succeeded", controller=False))
    assert not launcher_pod_ended({"metadata": {"name": "bare"}, "status": {"phase": "Succeeded"}})
