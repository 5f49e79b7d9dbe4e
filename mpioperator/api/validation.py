"""Validation of an MPIJob exactly as upstream's controller runs it after defaulting:
the same checks, order, field paths, error types and messages."""

from __future__ import annotations

import re
from typing import Any

from mpioperator.api import constants as api
from mpioperator.api.extensions import parsed
from mpioperator.api.field_errors import (
    FieldError,
    JSONString,
    aggregate_message,
    go_quote,
    invalid,
    not_supported,
    required,
)
from mpioperator.api.objects import Obj

__all__ = [
    "FieldError",
    "aggregate_message",
    "dns1035_label_errors",
    "longest_worker_hostname",
    "validate_mpijob",
    "validate_spec",
    "validate_worker_bound",
]


DNS1035_LABEL_MAX_LENGTH = 63
DNS1035_LABEL_FORMAT = "[a-z]([-a-z0-9]*[a-z0-9])?"
_DNS1035_LABEL = re.compile(DNS1035_LABEL_FORMAT)
DNS1035_LABEL_MESSAGE = (
    "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an "
    "alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', "
    f"regex used for validation is '{DNS1035_LABEL_FORMAT}')"
)
NON_NEGATIVE = "must be greater than or equal to 0"
MINIMUM = "minimum"

_SUPPORTED_RESTART_POLICIES = sorted((api.RESTART_POLICY_NEVER, api.RESTART_POLICY_ON_FAILURE))
_SUPPORTED_CLEAN_POD_POLICIES = sorted(api.CLEAN_POD_POLICIES)
_SUPPORTED_MANAGED_BY = sorted(api.MANAGED_BY_VALUES)
_SUPPORTED_IMPLEMENTATIONS = sorted(api.MPI_IMPLEMENTATIONS)


def dns1035_label_errors(value: str) -> list[str]:
    """apimachinery's IsDNS1035Label: the length is counted in bytes, as Go's len()."""
    problems = []
    if len(value.encode()) > DNS1035_LABEL_MAX_LENGTH:
        problems.append(f"must be no more than {DNS1035_LABEL_MAX_LENGTH} characters")
    # fullmatch: Go's `$` does not accept a trailing newline the way Python's does.
    if _DNS1035_LABEL.fullmatch(value) is None:
        problems.append(DNS1035_LABEL_MESSAGE)
    return problems


def longest_worker_hostname(job: Obj) -> str:
    """The longest pod hostname the job will need: its last worker's (the first when there are none)."""
    name = str(_dict(job.get("metadata")).get("name") or "")
    worker = _dict(_dict(_dict(job.get("spec")).get("mpiReplicaSpecs")).get(api.WORKER))
    count = worker.get("replicas")
    replicas = count if isinstance(count, int) and count > 0 else 1
    return f"{name}-worker-{replicas - 1}"


def validate_mpijob(job: Obj) -> list[FieldError]:
    """Upstream's checks, then our annotations' (docs/extensions.md)."""
    return validate_spec(job) + list(parsed.parse(job).errors)


def validate_spec(job: Obj) -> list[FieldError]:
    """Upstream's checks alone; the sync adds the annotations' from the value it parsed them into."""
    errors = _name(job)
    spec = _dict(job.get("spec"))
    errors += _replica_specs(spec.get("mpiReplicaSpecs"))
    slots = spec.get("slotsPerWorker")
    if slots is None:
        errors.append(required("spec.slotsPerWorker", "must have number of slots per worker"))
    elif slots < 0:
        errors.append(invalid("spec.slotsPerWorker", slots, NON_NEGATIVE))
    errors += _run_policy(_dict(spec.get("runPolicy")))
    if not spec.get("sshAuthMountPath"):
        errors.append(required("spec.sshAuthMountPath", "must have a mount path for SSH credentials"))
    implementation = spec.get("mpiImplementation") or ""
    if implementation not in api.MPI_IMPLEMENTATIONS:
        errors.append(
            not_supported("spec.mpiImplementation", JSONString(implementation), _SUPPORTED_IMPLEMENTATIONS)
        )
    return errors


def validate_worker_bound(job: Obj, maximum: int) -> list[FieldError]:
    """Ours (docs/extensions.md): the operator's --max-worker-replicas, under which the job's hostfile
    ConfigMap fits what the API server stores and the work of one sync stays bounded."""
    worker = _dict(_dict(_dict(job.get("spec")).get("mpiReplicaSpecs")).get(api.WORKER))
    count = worker.get("replicas")
    if isinstance(count, int) and count > maximum:
        detail = f"must be less than or equal to {maximum}"
        return [invalid(f"spec.mpiReplicaSpecs[{api.WORKER}].replicas", count, detail)]
    return []


def _dict(value: Any) -> Obj:
    return value if isinstance(value, dict) else {}


def _name(job: Obj) -> list[FieldError]:
    hostname = longest_worker_hostname(job)
    problems = dns1035_label_errors(hostname)
    if not problems:
        return []
    name = str(_dict(job.get("metadata")).get("name") or "")
    detail = (
        f"will not able to create pod and service with invalid DNS label {go_quote(hostname)}: "
        + ", ".join(problems)
    )
    return [invalid("metadata.name", name, detail)]


def _replica_specs(specs: Any) -> list[FieldError]:
    path = "spec.mpiReplicaSpecs"
    if specs is None:
        return [required(path, "must have replica specs")]
    specs = _dict(specs)
    errors: list[FieldError] = []
    launcher_path = f"{path}[{api.LAUNCHER}]"
    launcher = specs.get(api.LAUNCHER)
    if launcher is None:
        errors.append(required(launcher_path, "must have Launcher replica spec"))
    else:
        errors += _replica(_dict(launcher), launcher_path)
        count = _dict(launcher).get("replicas")
        if count is not None and count != 1:
            errors.append(invalid(f"{launcher_path}.replicas", count, "must be 1"))
    worker = specs.get(api.WORKER)
    # Workers are optional: a launcher-only job is valid.
    if worker is not None:
        worker_path = f"{path}[{api.WORKER}]"
        errors += _replica(_dict(worker), worker_path)
        count = _dict(worker).get("replicas")
        if count is not None and count <= 0:
            errors.append(invalid(f"{worker_path}.replicas", count, "must be greater than or equal to 1"))
    return errors


def _replica(replica: Obj, path: str) -> list[FieldError]:
    errors: list[FieldError] = []
    if replica.get("replicas") is None:
        errors.append(required(f"{path}.replicas", "must define number of replicas"))
    policy = replica.get("restartPolicy") or ""
    if policy not in _SUPPORTED_RESTART_POLICIES:
        errors.append(not_supported(f"{path}.restartPolicy", JSONString(policy), _SUPPORTED_RESTART_POLICIES))
    containers = _dict(_dict(replica.get("template")).get("spec")).get("containers")
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
        errors.append(
            not_supported(f"{path}.cleanPodPolicy", JSONString(clean), _SUPPORTED_CLEAN_POD_POLICIES)
        )
    for field in ("ttlSecondsAfterFinished", "activeDeadlineSeconds", "backoffLimit"):
        value = policy.get(field)
        if value is not None and value < 0:
            errors.append(invalid(f"{path}.{field}", value, NON_NEGATIVE, origin=MINIMUM))
    managed_by = policy.get("managedBy")
    if managed_by is not None and managed_by not in api.MANAGED_BY_VALUES:
        errors.append(not_supported(f"{path}.managedBy", managed_by, _SUPPORTED_MANAGED_BY))
    return errors
