"""Validation, ported from upstream's TestValidateMPIJob: types, paths and order of the errors."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from mpioperator.api.defaults import set_defaults
from mpioperator.api.field_errors import INVALID, NOT_SUPPORTED, REQUIRED, aggregate_message
from mpioperator.api.validation import dns1035_label_errors, validate_mpijob


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


DNS_PATTERN_MESSAGE = (
    "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic "
    "character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for "
    "validation is '[a-z]([-a-z0-9]*[a-z0-9])?')"
)


def test_empty_job_message_lists_every_error_in_upstream_text() -> None:
    message = aggregate_message(validate_mpijob({"metadata": {}, "spec": {}}))
    assert message == (
        '[metadata.name: Invalid value: "": will not able to create pod and service with invalid DNS label '
        f'"-worker-0": {DNS_PATTERN_MESSAGE}, '
        "spec.mpiReplicaSpecs: Required value: must have replica specs, "
        "spec.slotsPerWorker: Required value: must have number of slots per worker, "
        "spec.runPolicy.cleanPodPolicy: Required value: must have clean Pod policy, "
        "spec.sshAuthMountPath: Required value: must have a mount path for SSH credentials, "
        'spec.mpiImplementation: Unsupported value: "": supported values: "Intel", "MPICH", "OpenMPI"]'
    )


def test_a_defaulted_named_job_only_lacks_replica_specs() -> None:
    errors = validate_mpijob(set_defaults({"metadata": {"name": "foo"}, "spec": {}}))
    assert _shape(errors) == [(REQUIRED, "spec.mpiReplicaSpecs")]


def test_a_hostname_of_exactly_63_characters_is_valid() -> None:
    # 54 + len("-worker-9") == 63
    assert validate_mpijob(_job(name="a" * 54, workers=10)) == []


def test_the_hostname_checked_is_the_last_workers() -> None:
    # 54 + len("-worker-10") == 64
    (error,) = validate_mpijob(_job(name="a" * 54, workers=11))
    assert error.field == "metadata.name"
    assert error.bad_value == "a" * 54
    assert error.detail == (
        f'will not able to create pod and service with invalid DNS label "{"a" * 54}-worker-10": '
        "must be no more than 63 characters"
    )


@pytest.mark.parametrize(
    "worker",
    [None, {"replicas": 0, "restartPolicy": "Never"}],
    ids=["no worker spec", "zero workers"],
)
def test_without_workers_the_hostname_checked_uses_index_zero(worker: dict[str, Any] | None) -> None:
    job = _job(name="a" * 54)
    if worker is not None:
        job["spec"]["mpiReplicaSpecs"]["Worker"] = worker
    name_errors = [e for e in validate_mpijob(job) if e.field == "metadata.name"]
    assert name_errors == []


def test_name_length_is_counted_in_bytes_and_both_messages_are_given() -> None:
    name = "\u00e9" * 28  # 28 characters, 56 bytes; with "-worker-0" 65 bytes
    (error,) = validate_mpijob(_job(name=name))
    assert error.detail.endswith(f": must be no more than 63 characters, {DNS_PATTERN_MESSAGE}")


@pytest.mark.parametrize("name", ["foo\n", "Foo", "foo_bar", "foo.bar", ""])
def test_names_that_are_not_dns_1035_labels_are_invalid(name: str) -> None:
    assert _shape(validate_mpijob(_job(name=name))) == [(INVALID, "metadata.name")]


def test_a_launcher_only_job_is_valid() -> None:
    assert validate_mpijob(_job()) == []


def test_a_worker_spec_without_replicas_becomes_invalid_after_defaulting() -> None:
    job = _job()
    job["spec"]["mpiReplicaSpecs"]["Worker"] = _replica(None, None)
    errors = validate_mpijob(set_defaults(job))
    assert [str(e) for e in errors] == [
        "spec.mpiReplicaSpecs[Worker].replicas: Invalid value: 0: must be greater than or equal to 1"
    ]


@pytest.mark.parametrize("policy", ["Always", "ExitCode"])
def test_restart_policies_other_than_never_and_on_failure_are_rejected(policy: str) -> None:
    job = _job(workers=1)
    job["spec"]["mpiReplicaSpecs"]["Worker"]["restartPolicy"] = policy
    assert [str(e) for e in validate_mpijob(job)] == [
        f'spec.mpiReplicaSpecs[Worker].restartPolicy: Unsupported value: "{policy}": '
        'supported values: "Never", "OnFailure"'
    ]


def test_zero_slots_per_worker_is_valid_and_negative_is_invalid() -> None:
    job = _job()
    job["spec"]["slotsPerWorker"] = 0
    assert validate_mpijob(job) == []
    job["spec"]["slotsPerWorker"] = -1
    assert [str(e) for e in validate_mpijob(job)] == [
        "spec.slotsPerWorker: Invalid value: -1: must be greater than or equal to 0"
    ]


def test_zero_ttl_deadline_and_backoff_are_valid() -> None:
    assert validate_mpijob(_job(ttlSecondsAfterFinished=0, activeDeadlineSeconds=0, backoffLimit=0)) == []


@pytest.mark.parametrize("managed_by", ["kubeflow.org/mpi-operator", "kueue.x-k8s.io/multikueue"])
def test_known_managers_are_valid(managed_by: str) -> None:
    assert validate_mpijob(_job(managedBy=managed_by)) == []


def test_unknown_manager_is_go_quoted_with_sorted_supported_values() -> None:
    assert [str(e) for e in validate_mpijob(_job(managedBy="a<b"))] == [
        'spec.runPolicy.managedBy: Unsupported value: "a<b": supported values: '
        '"kubeflow.org/mpi-operator", "kueue.x-k8s.io/multikueue"'
    ]


def test_missing_replica_specs_skip_every_replica_check() -> None:
    job = _job()
    del job["spec"]["mpiReplicaSpecs"]
    assert [str(e) for e in validate_mpijob(job)] == [
        "spec.mpiReplicaSpecs: Required value: must have replica specs"
    ]


def test_validation_does_not_mutate_the_job() -> None:
    job = _job(workers=0)
    before = copy.deepcopy(job)
    validate_mpijob(job)
    assert job == before


def test_dns_1035_check_rejects_a_trailing_newline() -> None:
    assert dns1035_label_errors("foo\n") == [DNS_PATTERN_MESSAGE]
    assert dns1035_label_errors("foo") == []
