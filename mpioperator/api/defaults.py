"""Defaulting of an MPIJob, as upstream's controller does in memory at every sync.

Pure: returns a defaulted deep copy; the stored object is never changed, and the defaults are
never written back (only status is). One deliberate difference:
cleanPodPolicy defaults to Running, as the API doc and user docs say, not upstream's None.
"""

from __future__ import annotations

from typing import Any

from mpioperator.api import constants as api
from mpioperator.api.objects import Obj, json_copy

DEFAULT_CLEAN_POD_POLICY = api.CLEAN_POD_POLICY_RUNNING
DEFAULT_LAUNCHER_REPLICAS = 1
# Combined with validation this makes a Worker entry without replicas invalid, as upstream.
DEFAULT_WORKER_REPLICAS = 0


def set_defaults(job: Obj) -> Obj:
    out = json_copy(job)
    spec = _child(out, "spec")
    run_policy = _child(spec, "runPolicy")
    if run_policy.get("cleanPodPolicy") is None:
        run_policy["cleanPodPolicy"] = DEFAULT_CLEAN_POD_POLICY
    if spec.get("slotsPerWorker") is None:
        spec["slotsPerWorker"] = api.DEFAULT_SLOTS_PER_WORKER
    if not spec.get("sshAuthMountPath"):
        spec["sshAuthMountPath"] = api.DEFAULT_SSH_AUTH_MOUNT_PATH
    if not spec.get("mpiImplementation"):
        spec["mpiImplementation"] = api.OPENMPI
    if not spec.get("launcherCreationPolicy"):
        spec["launcherCreationPolicy"] = api.AT_STARTUP
    replicas = spec.get("mpiReplicaSpecs")
    if isinstance(replicas, dict):
        _default_replica(
            replicas.get(api.LAUNCHER), api.DEFAULT_LAUNCHER_RESTART_POLICY, DEFAULT_LAUNCHER_REPLICAS
        )
        _default_replica(replicas.get(api.WORKER), api.DEFAULT_RESTART_POLICY, DEFAULT_WORKER_REPLICAS)
    return out


def clean_pod_policy(job: Obj) -> str:
    """The effective cleanPodPolicy, whether or not the job has been defaulted."""
    spec = job.get("spec") or {}
    policy = (spec.get("runPolicy") or {}).get("cleanPodPolicy")
    return DEFAULT_CLEAN_POD_POLICY if policy is None else str(policy)


def _child(parent: Obj, key: str) -> Obj:
    # A Go struct field (spec, runPolicy) is never nil, so an explicit null behaves like {}.
    value = parent.get(key)
    if not isinstance(value, dict):
        value = {}
        parent[key] = value
    return value


def _default_replica(replica: Any, restart_policy: str, count: int) -> None:
    if not isinstance(replica, dict):
        return
    if not replica.get("restartPolicy"):
        replica["restartPolicy"] = restart_policy
    if replica.get("replicas") is None:
        replica["replicas"] = count
