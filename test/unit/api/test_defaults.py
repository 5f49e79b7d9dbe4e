"""Defaulting, ported from upstream's TestSetDefaults_MPIJob, plus our cleanPodPolicy fix (D5 #1)."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from mpioperator.api.defaults import set_defaults

pytestmark = pytest.mark.unit


def test_base_defaults_fill_slots_ssh_path_implementation_creation_policy_and_clean_policy() -> None:
    out = set_defaults({"spec": {}})
    assert out["spec"] == {
        "slotsPerWorker": 1,
        "runPolicy": {"cleanPodPolicy": "Running"},
        "sshAuthMountPath": "/root/.ssh",
        "mpiImplementation": "OpenMPI",
        "launcherCreationPolicy": "AtStartup",
    }


def test_clean_pod_policy_defaults_to_running_not_upstreams_none() -> None:
    """D5 #1: the API doc and user docs promise Running; upstream's code says None."""
    assert set_defaults({"spec": {}})["spec"]["runPolicy"]["cleanPodPolicy"] == "Running"


@pytest.mark.parametrize("implementation", ["Intel", "MPICH"])
def test_explicit_values_are_not_overridden(implementation: str) -> None:
    spec: dict[str, Any] = {
        "slotsPerWorker": 10,
        "runPolicy": {"cleanPodPolicy": "All"},
        "sshAuthMountPath": "/home/mpiuser/.ssh",
        "mpiImplementation": implementation,
        "launcherCreationPolicy": "WaitForWorkersReady",
    }
    assert set_defaults({"spec": copy.deepcopy(spec)})["spec"] == spec


def test_launcher_defaults_to_one_replica_restarting_on_failure() -> None:
    out = set_defaults({"spec": {"mpiReplicaSpecs": {"Launcher": {}}}})
    assert out["spec"]["mpiReplicaSpecs"]["Launcher"] == {"replicas": 1, "restartPolicy": "OnFailure"}


def test_worker_defaults_to_zero_replicas_never_restarting() -> None:
    out = set_defaults({"spec": {"mpiReplicaSpecs": {"Worker": {}}}})
    assert out["spec"]["mpiReplicaSpecs"]["Worker"] == {"replicas": 0, "restartPolicy": "Never"}


def test_defaulting_does_not_mutate_its_argument() -> None:
    job: dict[str, Any] = {"spec": {"mpiReplicaSpecs": {"Launcher": {}, "Worker": {}}}}
    before = copy.deepcopy(job)
    set_defaults(job)
    assert job == before


def test_run_launcher_as_worker_and_suspend_stay_unset() -> None:
    out = set_defaults({"spec": {}})
    assert "runLauncherAsWorker" not in out["spec"]
    assert "suspend" not in out["spec"]["runPolicy"]
