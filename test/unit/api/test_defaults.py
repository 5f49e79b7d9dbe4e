"""Defaulting, ported from upstream's TestSetDefaults_MPIJob, plus our cleanPodPolicy fix (D5 #1)."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from mpioperator.api.defaults import clean_pod_policy, set_defaults


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


def test_an_explicit_clean_pod_policy_none_is_kept() -> None:
    """Users who want upstream's behaviour can still ask for it."""
    out = set_defaults({"spec": {"runPolicy": {"cleanPodPolicy": "None"}}})
    assert out["spec"]["runPolicy"]["cleanPodPolicy"] == "None"


def test_explicit_replica_values_are_not_overridden() -> None:
    specs = {
        "Launcher": {"replicas": 1, "restartPolicy": "Never"},
        "Worker": {"replicas": 4, "restartPolicy": "OnFailure"},
    }
    out = set_defaults({"spec": {"mpiReplicaSpecs": copy.deepcopy(specs)}})
    assert out["spec"]["mpiReplicaSpecs"] == specs


def test_a_missing_worker_spec_is_not_created() -> None:
    out = set_defaults({"spec": {"mpiReplicaSpecs": {"Launcher": {}}}})
    assert set(out["spec"]["mpiReplicaSpecs"]) == {"Launcher"}


def test_null_spec_and_run_policy_are_defaulted_like_empty_ones() -> None:
    assert set_defaults({"spec": None}) == set_defaults({"spec": {}})
    assert set_defaults({"spec": {"runPolicy": None}}) == set_defaults({"spec": {}})


def test_other_run_policy_fields_are_left_for_the_launcher_jobs_own_defaulting() -> None:
    out = set_defaults({"spec": {"runPolicy": {}}})
    assert out["spec"]["runPolicy"] == {"cleanPodPolicy": "Running"}


def test_the_result_shares_no_nested_objects_with_the_input() -> None:
    job: dict[str, Any] = {"metadata": {"labels": {"a": "b"}}, "spec": {"mpiReplicaSpecs": {"Worker": {}}}}
    out = set_defaults(job)
    out["metadata"]["labels"]["a"] = "changed"
    out["spec"]["mpiReplicaSpecs"]["Worker"]["replicas"] = 7
    assert job == {"metadata": {"labels": {"a": "b"}}, "spec": {"mpiReplicaSpecs": {"Worker": {}}}}


@pytest.mark.parametrize(
    ("run_policy", "expected"),
    [(None, "Running"), ({}, "Running"), ({"cleanPodPolicy": "All"}, "All")],
)
def test_clean_pod_policy_reports_the_effective_policy_of_a_raw_job(
    run_policy: dict[str, Any] | None, expected: str
) -> None:
    assert clean_pod_policy({"spec": {"runPolicy": run_policy}}) == expected
