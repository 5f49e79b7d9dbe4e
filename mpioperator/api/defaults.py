"""Defaulting of an MPIJob, as upstream's controller does in memory at every sync (§1.9).

Pure: returns a defaulted deep copy; the stored object is never changed. One deliberate
difference (decisions.md D5 #1): cleanPodPolicy defaults to Running, as the API doc says.
"""

from __future__ import annotations

import copy
from typing import Any

from mpioperator.api import constants as api

Obj = dict[str, Any]

DEFAULT_CLEAN_POD_POLICY = api.CLEAN_POD_POLICY_RUNNING


def set_defaults(job: Obj) -> Obj:
    out = copy.deepcopy(job)
    spec = out.setdefault("spec", {})
    run_policy = spec.setdefault("runPolicy", {})
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
        _default_replica(replicas.get(api.LAUNCHER), api.DEFAULT_LAUNCHER_RESTART_POLICY, 1)
        _default_replica(replicas.get(api.WORKER), api.DEFAULT_RESTART_POLICY, 0)
    return out


def _default_replica(replica: Any, restart_policy: str, count: int) -> None:
    if not isinstance(replica, dict):
        return
    if not replica.get("restartPolicy"):
        replica["restartPolicy"] = restart_policy
    if replica.get("replicas") is None:
        replica["replicas"] = count
