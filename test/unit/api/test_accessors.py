"""Typed getters answer with the effective value, whether or not the job was defaulted."""

from __future__ import annotations

from typing import Any

import pytest

from mpioperator.api import accessors as acc
from mpioperator.api.defaults import set_defaults

RAW: dict[str, Any] = {
    "metadata": {"name": "pi", "namespace": "ns"},
    "spec": {"mpiReplicaSpecs": {"Launcher": {}, "Worker": {"replicas": 3}}},
}


@pytest.mark.parametrize("job", [RAW, set_defaults(RAW)], ids=["raw", "defaulted"])
def test_getters_give_the_same_answer_before_and_after_defaulting(job: dict[str, Any]) -> None:
    assert acc.name(job) == "pi"
    assert acc.namespace(job) == "ns"
    assert acc.replica_count(job, "Launcher") == 1
    assert acc.worker_replicas(job) == 3
    assert acc.restart_policy(job, "Launcher") == "OnFailure"
    assert acc.restart_policy(job, "Worker") == "Never"
    assert acc.slots_per_worker(job) == 1
    assert acc.ssh_auth_mount_path(job) == "/root/.ssh"
    assert acc.mpi_implementation(job) == "OpenMPI"
    assert acc.launcher_creation_policy(job) == "AtStartup"
    assert acc.clean_pod_policy(job) == "Running"
    assert acc.run_launcher_as_worker(job) is False
    assert acc.suspended(job) is False
    assert acc.managed_by(job) is None


def test_a_missing_replica_type_has_no_spec_and_zero_replicas() -> None:
    job: dict[str, Any] = {"spec": {"mpiReplicaSpecs": {"Launcher": {}}}}
    assert acc.replica_spec(job, "Worker") is None
    assert acc.worker_replicas(job) == 0


def test_a_worker_spec_without_replicas_counts_zero_as_upstream_defaults() -> None:
    assert acc.worker_replicas({"spec": {"mpiReplicaSpecs": {"Worker": {}}}}) == 0


def test_explicit_values_are_returned() -> None:
    job = {
        "spec": {
            "slotsPerWorker": 4,
            "runLauncherAsWorker": True,
            "sshAuthMountPath": "/home/u/.ssh",
            "mpiImplementation": "Intel",
            "launcherCreationPolicy": "WaitForWorkersReady",
            "runPolicy": {"suspend": True, "managedBy": "kueue.x-k8s.io/multikueue", "cleanPodPolicy": "All"},
            "mpiReplicaSpecs": {"Worker": {"replicas": 2, "restartPolicy": "OnFailure"}},
        }
    }
    assert acc.slots_per_worker(job) == 4
    assert acc.run_launcher_as_worker(job) is True
    assert acc.ssh_auth_mount_path(job) == "/home/u/.ssh"
    assert acc.mpi_implementation(job) == "Intel"
    assert acc.launcher_creation_policy(job) == "WaitForWorkersReady"
    assert acc.suspended(job) is True
    assert acc.managed_by(job) == "kueue.x-k8s.io/multikueue"
    assert acc.clean_pod_policy(job) == "All"
    assert acc.restart_policy(job, "Worker") == "OnFailure"
    assert acc.worker_replicas(job) == 2


def test_getters_tolerate_null_spec_parts() -> None:
    job: dict[str, Any] = {"metadata": None, "spec": {"runPolicy": None, "mpiReplicaSpecs": None}}
    assert acc.name(job) == ""
    assert acc.suspended(job) is False
    assert acc.replica_spec(job, "Launcher") is None
