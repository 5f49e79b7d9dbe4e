"""Validation of an MPIJob exactly as upstream's controller runs it after defaulting (§1.11):
the same checks, order, field paths, error types and messages."""

from __future__ import annotations

import re
from typing import Any

from mpioperator.api import constants as api
from mpioperator.api.field_errors import (
    FieldError,
    JSONString,
    aggregate_message,
    invalid,
    not_supported,
    required,
)

__all__ = ["FieldError", "aggregate_message", "dns1035_label_errors", "validate_mpijob", "worker_hostname"]

Obj = dict[str, Any]

_DNS1035 = re.compile(r"^[a-z]([-a-z0-9]*[a-z0-9])?$")
DNS1035_MAX = 63
DNS1035_FORMAT_MESSAGE = (
    "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an "
    "alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', "
    "regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')"
)
MINIMUM = "minimum"


def dns1035_label_errors(value: str) -> list[str]:
    problems = []
    if len(value) > DNS1035_MAX:
        problems.append(f"must be no more than {DNS1035_MAX} characters")
    if not _DNS1035.match(value):
        problems.append(DNS1035_FORMAT_MESSAGE)
    return problems


def worker_hostname(job: Obj) -> str:
    """The longest pod hostname the job will need: its last worker's."""
    name = str((job.get("metadata") or {}).get("name") or "")
    worker = ((job.get("spec") or {}).get("mpiReplicaSpecs") or {}).get(api.WORKER)
    replicas = 1
    if isinstance(worker, dict) and isinstance(worker.get("replicas"), int) and worker["replicas"] > 0:
        replicas = worker["replicas"]
    return f"{name}-worker-{replicas - 1}"


def validate_mpijob(job: Obj) -> list[FieldError]:
    errors: list[FieldError] = []
    name = str((job.get("metadata") or {}).get("name") or "")
    hostname = worker_hostname(job)
    problems = dns1035_label_errors(hostname)
    if problems:
        errors.append(
            invalid(
                "metadata.name",
                name,
                f'will not able to create pod and service with invalid DNS label "{hostname}": '
                + ", ".join(problems),
            )
        )
    spec = job.get("spec") or {}
    errors.extend(_replica_specs(spec.get("mpiReplicaSpecs")))
    slots = spec.get("slotsPerWorker")
    if slots is None:
        errors.append(required("spec.slotsPerWorker", "must have number of slots per worker"))
    elif slots < 0:
        errors.append(invalid("spec.slotsPerWorker", slots, "must be greater than or equal to 0"))
    errors.extend(_run_policy(spec.get("runPolicy") or {}))
    if not spec.get("sshAuthMountPath"):
        errors.append(required("spec.sshAuthMountPath", "must have a mount path for SSH credentials"))
    implementation = spec.get("mpiImplementation") or ""
    if implementation not in api.MPI_IMPLEMENTATIONS:
        errors.append(
            not_supported("spec.mpiImplementation", JSONString(implementation), api.MPI_IMPLEMENTATIONS)
        )
    return errors


def _replica_specs(specs: Any) -> list[FieldError]:
    path = "spec.mpiReplicaSpecs"
    if specs is None:
        return [required(path, "must have replica specs")]
    errors: list[FieldError] = []
    launcher = specs.get(api.LAUNCHER)
    launcher_path = f"{path}[{api.LAUNCHER}]"
    if launcher is None:
        errors.append(required(launcher_path, "must have Launcher replica spec"))
    else:
        errors.extend(_replica(launcher, launcher_path))
        count = launcher.get("replicas")
        if count is not None and count != 1:
            errors.append(invalid(f"{launcher_path}.replicas", count, "must be 1"))
    worker = specs.get(api.WORKER)
    if worker is not None:
        worker_path = f"{path}[{api.WORKER}]"
        errors.extend(_replica(worker, worker_path))
        count = worker.get("replicas")
        if count is not None and count <= 0:
            errors.append(invalid(f"{worker_path}.replicas", count, "must be greater than or equal to 1"))
    return errors


def _replica(replica: Obj, path: str) -> list[FieldError]:
    errors: list[FieldError] = []
    if replica.get("replicas") is None:
        errors.append(required(f"{path}.replicas", "must define number of replicas"))
    policy = replica.get("restartPolicy") or ""
    if policy not in (api.RESTART_POLICY_NEVER, api.RESTART_POLICY_ON_FAILURE):
        errors.append(
            not_supported(
                f"{path}.restartPolicy",
                JSONString(policy),
                [api.RESTART_POLICY_NEVER, api.RESTART_POLICY_ON_FAILURE],
            )
        )
    containers = (((replica.get("template") or {}).get("spec")) or {}).get("containers")
    if not containers:
        errors.append(required(f"{path}.template.spec.containers", "must define at least one container"))
    return errors


def _run_policy(policy: Obj) -> list[FieldError]:
    path = "spec.runPolicy"
    errors: list[FieldError] = []
    clean = policy.get("cleanPodPolicy")
    if clean is None:
        errors.append(required(f"{path}.cleanPodPolicy", "must have clean Pod policy"))
    elif clean not in api.CLEAN_POD_POLICIES:
        errors.append(not_supported(f"{path}.cleanPodPolicy", JSONString(clean), api.CLEAN_POD_POLICIES))
    for field in ("ttlSecondsAfterFinished", "activeDeadlineSeconds", "backoffLimit"):
        value = policy.get(field)
        if value is not None and value < 0:
            errors.append(
                invalid(f"{path}.{field}", value, "must be greater than or equal to 0", origin=MINIMUM)
            )
    managed_by = policy.get("managedBy")
    if managed_by is not None and managed_by not in api.MANAGED_BY_VALUES:
        errors.append(not_supported(f"{path}.managedBy", managed_by, api.MANAGED_BY_VALUES))
    return errors
