"""Typed reads of an MPIJob dict that give the effective value, defaulted or not.

Each getter answers as the controller would after set_defaults, so callers may pass either
the cached object or the defaulted copy.
"""

from __future__ import annotations

from typing import Any

from mpioperator.api import constants as api
from mpioperator.api.defaults import (
    DEFAULT_LAUNCHER_REPLICAS,
    DEFAULT_WORKER_REPLICAS,
    clean_pod_policy,
)
from mpioperator.api.objects import Obj

__all__ = [
    "clean_pod_policy",
    "launcher_creation_policy",
    "managed_by",
    "mpi_implementation",
    "name",
    "namespace",
    "replica_count",
    "replica_spec",
    "restart_policy",
    "run_launcher_as_worker",
    "run_policy",
    "scheduling_policy",
    "slots_per_worker",
    "ssh_auth_mount_path",
    "suspended",
    "ttl_seconds_after_finished",
    "worker_replicas",
]


def _spec(job: Obj) -> Obj:
    spec = job.get("spec")
    return spec if isinstance(spec, dict) else {}


def run_policy(job: Obj) -> Obj:
    policy = _spec(job).get("runPolicy")
    return policy if isinstance(policy, dict) else {}


def scheduling_policy(job: Obj) -> Obj:
    policy = run_policy(job).get("schedulingPolicy")
    return policy if isinstance(policy, dict) else {}


def name(job: Obj) -> str:
    return str((job.get("metadata") or {}).get("name") or "")


def namespace(job: Obj) -> str:
    return str((job.get("metadata") or {}).get("namespace") or "")


def replica_spec(job: Obj, replica_type: str) -> Obj | None:
    specs = _spec(job).get("mpiReplicaSpecs")
    if not isinstance(specs, dict):
        return None
    spec = specs.get(replica_type)
    return spec if isinstance(spec, dict) else None


def replica_count(job: Obj, replica_type: str) -> int:
    """spec.mpiReplicaSpecs[type].replicas; 0 when the type has no spec."""
    spec = replica_spec(job, replica_type)
    if spec is None:
        return 0
    count = spec.get("replicas")
    if count is None:
        return DEFAULT_LAUNCHER_REPLICAS if replica_type == api.LAUNCHER else DEFAULT_WORKER_REPLICAS
    return int(count)


def worker_replicas(job: Obj) -> int:
    return replica_count(job, api.WORKER)


def restart_policy(job: Obj, replica_type: str) -> str:
    spec = replica_spec(job, replica_type) or {}
    default = (
        api.DEFAULT_LAUNCHER_RESTART_POLICY if replica_type == api.LAUNCHER else api.DEFAULT_RESTART_POLICY
    )
    return str(spec.get("restartPolicy") or default)


def slots_per_worker(job: Obj) -> int:
    slots = _spec(job).get("slotsPerWorker")
    return api.DEFAULT_SLOTS_PER_WORKER if slots is None else int(slots)


def ssh_auth_mount_path(job: Obj) -> str:
    return str(_spec(job).get("sshAuthMountPath") or api.DEFAULT_SSH_AUTH_MOUNT_PATH)


def mpi_implementation(job: Obj) -> str:
    return str(_spec(job).get("mpiImplementation") or api.OPENMPI)


def launcher_creation_policy(job: Obj) -> str:
    return str(_spec(job).get("launcherCreationPolicy") or api.AT_STARTUP)


def run_launcher_as_worker(job: Obj) -> bool:
    return _spec(job).get("runLauncherAsWorker") is True


def suspended(job: Obj) -> bool:
    return run_policy(job).get("suspend") is True


def managed_by(job: Obj) -> str | None:
    value: Any = run_policy(job).get("managedBy")
    return None if value is None else str(value)


def ttl_seconds_after_finished(job: Obj) -> int | None:
    ttl = run_policy(job).get("ttlSecondsAfterFinished")
    return None if ttl is None else int(ttl)
