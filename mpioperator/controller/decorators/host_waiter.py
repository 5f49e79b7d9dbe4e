"""The launcher's `wait-for-hosts` init container (annotation `mpioperator.io/wait-for-ssh-port`).

It runs `mpi-operator wait-for-hosts` from the operator's own image, so the user's image needs nothing:
the launcher's own container (mpirun) starts only once every host of the hostfile resolves and accepts
connections on the port, and a resumed job's new launcher pod waits again. Last among the init containers,
so the wait ends right before mpirun starts.

It takes the launcher container's CPU and memory, requests and limits: a pod reserves the larger of its
init containers and its containers, so the pod's requests, its QoS class and a gang's minResources stay
what they were without it.
"""

from __future__ import annotations

from dataclasses import dataclass

from mpioperator.api.extensions.host_wait import CONTAINER_NAME, SUBCOMMAND
from mpioperator.api.extensions.parsed import Extensions
from mpioperator.api.objects import Obj
from mpioperator.controller.startup_deadline import deadline_seconds

DEFAULT_IMAGE = "mpioperator/mpi-operator-py:latest"  # the manifests' operator image
# The operator image's user (the Dockerfile's), named so a pod that runs as root elsewhere runs this as not.
IMAGE_USER = 65532
_SHARED_RESOURCES = ("cpu", "memory")


@dataclass(frozen=True, slots=True)
class HostWaiter:
    image: str = DEFAULT_IMAGE
    # --worker-startup-deadline-seconds: the wait's bound for a job without the deadline annotation.
    default_deadline_seconds: int = 0


def _resources(container: Obj) -> Obj:
    own = container.get("resources") or {}
    out: Obj = {}
    for kind in ("requests", "limits"):
        amounts = {k: v for k, v in (own.get(kind) or {}).items() if k in _SHARED_RESOURCES}
        if amounts:
            out[kind] = amounts
    return out


def add_host_waiter(
    job: Obj,
    ext: Extensions,
    pod_template: Obj,
    waiter: HostWaiter,
    config_volume: str,
    config_mount: str,
) -> None:
    """Adds the init container when the job asks for it; nothing otherwise."""
    port = ext.launch.wait_for_ssh_port
    # With the exec agent no worker listens on the port: the sync waits for Running workers instead.
    if port is None or ext.launch.exec_agent:
        return
    spec = pod_template["spec"]
    seconds = deadline_seconds(job, waiter.default_deadline_seconds, ext)
    container: Obj = {
        "name": CONTAINER_NAME,
        "image": waiter.image,
        "command": [
            "mpi-operator",
            SUBCOMMAND,
            f"--hostfile={config_mount}/hostfile",
            f"--port={port}",
            f"--deadline-seconds={seconds}",
        ],
        "volumeMounts": [{"name": config_volume, "mountPath": config_mount, "readOnly": True}],
        "securityContext": {
            "runAsUser": IMAGE_USER,
            "runAsGroup": IMAGE_USER,
            "runAsNonRoot": True,
            "allowPrivilegeEscalation": False,
            "readOnlyRootFilesystem": True,
            "capabilities": {"drop": ["ALL"]},
            "seccompProfile": {"type": "RuntimeDefault"},
        },
    }
    resources = _resources(spec["containers"][0])
    if resources:
        container["resources"] = resources
    spec["initContainers"] = [*(spec.get("initContainers") or []), container]
