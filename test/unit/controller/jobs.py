"""Already-defaulted MPIJob fixtures (the shape `set_defaults` returns), written out explicitly."""

from __future__ import annotations

import copy
from typing import Any

from mpioperator.api.objects import Obj

OWNER: Obj = {
    "apiVersion": "kubeflow.org/v2beta1",
    "kind": "MPIJob",
    "name": "pi",
    "uid": "U",
    "controller": True,
    "blockOwnerDeletion": True,
}


def reference_job(workers: int | None = 2) -> Obj:
    """Appendix A's job: `pi` in `default`, uid U, OpenMPI, every default filled in."""
    replica_specs: Obj = {
        "Launcher": {
            "replicas": 1,
            "restartPolicy": "OnFailure",
            "template": {
                "spec": {
                    "containers": [
                        {
                            "name": "launcher",
                            "image": "img",
                            "command": ["mpirun"],
                            "args": ["-n", "2", "/pi"],
                        }
                    ]
                }
            },
        },
    }
    if workers is not None:
        replica_specs["Worker"] = {
            "replicas": workers,
            "restartPolicy": "Never",
            "template": {"spec": {"containers": [{"name": "worker", "image": "img"}]}},
        }
    return {
        "apiVersion": "kubeflow.org/v2beta1",
        "kind": "MPIJob",
        "metadata": {"name": "pi", "namespace": "default", "uid": "U"},
        "spec": {
            "slotsPerWorker": 1,
            "runPolicy": {"cleanPodPolicy": "Running"},
            "sshAuthMountPath": "/root/.ssh",
            "mpiImplementation": "OpenMPI",
            "launcherCreationPolicy": "AtStartup",
            "mpiReplicaSpecs": replica_specs,
        },
    }


def with_spec(job: Obj, **fields: Any) -> Obj:
    out = copy.deepcopy(job)
    out["spec"].update(fields)
    return out


def pod(name: str, phase: str, namespace: str = "default", **status: Any) -> Obj:
    return {
        "metadata": {"name": name, "namespace": namespace},
        "status": {"phase": phase, **status},
    }
