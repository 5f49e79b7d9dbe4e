"""Validation, ported from upstream's TestValidateMPIJob: types, paths and order of the errors."""

from __future__ import annotations

from typing import Any

import pytest

from mpioperator.api.field_errors import INVALID, NOT_SUPPORTED, REQUIRED, aggregate_message
from mpioperator.api.validation import validate_mpijob

pytestmark = pytest.mark.unit


def _replica(replicas: int | None, policy: str | None, containers: bool = True) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "template": {"spec": {"containers": [{"name": "c", "image": "i"}] if containers else []}}
    }
    if replicas is not None:
        spec["replicas"] = replicas
    if policy is not None:
        spec["restartPolicy"] = policy
    return spec


def _job(
    name: str = "foo", implementation: str = "Intel", workers: int | None = None, **run: Any
) -> dict[str, Any]:
    specs: dict[str, Any] = {"Launcher": _replica(1, "Never")}
    if workers is not None:
        specs["Worker"] = _replica(workers, "Never")
    return {
        "metadata": {"name": name},
        "spec": {
            "slotsPerWorker": 2,
            "runPolicy": {"cleanPodPolicy": "None", **run},
            "sshAuthMountPath": "/home/mpiuser/.ssh",
            "mpiImplementation": implementation,
            "mpiReplicaSpecs": specs,
        },
    }


def _shape(errors: list[Any]) -> list[tuple[str, str]]:
    return [(e.type, e.field) for e in errors]


@pytest.mark.parametrize(
    "job",
    [_job(), _job(workers=3), _job(implementation="MPICH"), _job(implementation="MPICH", workers=3)],
    ids=["valid intel", "valid with worker intel", "valid mpich", "valid with worker mpich"],
)
def test_valid_jobs_have_no_errors(job: dict[str, Any]) -> None:
    assert validate_mpijob(job) == []


def test_empty_job_reports_name_replica_specs_slots_clean_policy_ssh_path_and_implementation_in_order() -> (
    None
):
    assert _shape(validate_mpijob({"metadata": {}, "spec": {}})) == [
        (INVALID, "metadata.name"),
        (REQUIRED, "spec.mpiReplicaSpecs"),
        (REQUIRED, "spec.slotsPerWorker"),
        (REQUIRED, "spec.runPolicy.cleanPodPolicy"),
        (REQUIRED, "spec.sshAuthMountPath"),
        (NOT_SUPPORTED, "spec.mpiImplementation"),
    ]


def test_invalid_fields_are_each_reported() -> None:
    job = _job(
        name="this-name-is-waaaaaaaay-too-long-for-a-worker-hostname-xxxxxxxxx",
        implementation="Unknown",
        workers=1000,
        ttlSecondsAfterFinished=-1,
        activeDeadlineSeconds=-1,
        backoffLimit=-1,
        managedBy="invalid.com/controller",
    )
    job["spec"]["runPolicy"]["cleanPodPolicy"] = "unknown"
    errors = validate_mpijob(job)
    assert _shape(errors) == [
        (INVALID, "metadata.name"),
        (NOT_SUPPORTED, "spec.runPolicy.cleanPodPolicy"),
        (INVALID, "spec.runPolicy.ttlSecondsAfterFinished"),
        (INVALID, "spec.runPolicy.activeDeadlineSeconds"),
        (INVALID, "spec.runPolicy.backoffLimit"),
        (NOT_SUPPORTED, "spec.runPolicy.managedBy"),
        (NOT_SUPPORTED, "spec.mpiImplementation"),
    ]
    assert [e.origin for e in errors[2:5]] == ["minimum"] * 3


def test_empty_replica_specs_require_a_launcher() -> None:
    job = _job()
    job["spec"]["mpiReplicaSpecs"] = {}
    assert _shape(validate_mpijob(job)) == [(REQUIRED, "spec.mpiReplicaSpecs[Launcher]")]


def test_missing_replica_fields_are_required_for_both_types() -> None:
    job = _job()
    job["spec"]["mpiReplicaSpecs"] = {
        "Launcher": _replica(None, None, False),
        "Worker": _replica(None, None, False),
    }
    assert _shape(validate_mpijob(job)) == [
        (REQUIRED, "spec.mpiReplicaSpecs[Launcher].replicas"),
        (NOT_SUPPORTED, "spec.mpiReplicaSpecs[Launcher].restartPolicy"),
        (REQUIRED, "spec.mpiReplicaSpecs[Launcher].template.spec.containers"),
        (REQUIRED, "spec.mpiReplicaSpecs[Worker].replicas"),
        (NOT_SUPPORTED, "spec.mpiReplicaSpecs[Worker].restartPolicy"),
        (REQUIRED, "spec.mpiReplicaSpecs[Worker].template.spec.containers"),
    ]


def test_invalid_replica_fields_report_restart_policy_before_replicas() -> None:
    job = _job()
    job["spec"]["mpiReplicaSpecs"] = {"Launcher": _replica(2, "Always"), "Worker": _replica(0, "Invalid")}
    assert _shape(validate_mpijob(job)) == [
        (NOT_SUPPORTED, "spec.mpiReplicaSpecs[Launcher].restartPolicy"),
        (INVALID, "spec.mpiReplicaSpecs[Launcher].replicas"),
        (NOT_SUPPORTED, "spec.mpiReplicaSpecs[Worker].restartPolicy"),
        (INVALID, "spec.mpiReplicaSpecs[Worker].replicas"),
    ]


def test_name_starting_with_a_digit_is_invalid() -> None:
    assert _shape(validate_mpijob(_job(name="1-foo"))) == [(INVALID, "metadata.name")]


def test_messages_render_like_apimachinery() -> None:
    job = _job(name="1-foo")
    job["spec"]["runPolicy"]["cleanPodPolicy"] = "<x>"
    job["spec"]["mpiReplicaSpecs"]["Launcher"]["replicas"] = 2
    message = aggregate_message(validate_mpijob(job))
    assert message == (
        '[metadata.name: Invalid value: "1-foo": will not able to create pod and service with invalid DNS label '
        "\"1-foo-worker-0\": a DNS-1035 label must consist of lower case alphanumeric characters or '-', start "
        "with an alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', "
        "regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?'), "
        "spec.mpiReplicaSpecs[Launcher].replicas: Invalid value: 2: must be 1, "
        'spec.runPolicy.cleanPodPolicy: Unsupported value: "\\u003cx\\u003e": supported values: "All", "None", '
        '"Running"]'
    )


def test_long_name_of_valid_characters_gets_only_the_length_message() -> None:
    (error,) = validate_mpijob(_job(name="a" * 60, workers=10))
    assert error.detail.endswith(": must be no more than 63 characters")


def test_single_error_aggregate_is_the_error_itself() -> None:
    (error,) = validate_mpijob(_job(name="1-foo"))
    assert aggregate_message([error]) == str(error)
