"""Pods in many states, made on a real API server: what the protobuf and JSON decoders are compared on.

Each pod is created and then given a status through the status subresource, as kubelet would: pending,
running with container statuses and every condition, failed with a reason and a non-ASCII message,
succeeded with init containers, owned by one or two owners (controller set, unset, false), labelled with
empty values, annotated, and one deleted while a finalizer holds it (a deletion timestamp and grace
period). The API server has no kubelet or controllers in the `apiserver` tier, so the states stay put.
"""

from __future__ import annotations

from typing import Any

from mpioperator.api.objects import Obj
from mpioperator.kube.client import KubeClient
from mpioperator.kube.resources import PODS

T1 = "2026-11-23T06:00:00Z"
T2 = "2026-11-23T06:00:07Z"
FINALIZER = "mpioperator.io/test-hold"
RUNNING_CONDITIONS = ("PodReadyToStartContainers", "Initialized", "Ready", "ContainersReady", "PodScheduled")
JOB_LABELS = {"training.kubeflow.org/job-name": "pi", "training.kubeflow.org/job-role": "worker"}


def _spec(init: bool = False) -> Obj:
    spec: Obj = {"containers": [{"name": "main", "image": "busybox", "command": ["sleep", "1"]}]}
    if init:
        spec["initContainers"] = [{"name": "setup", "image": "busybox"}]
    return spec


def _owner(name: str, uid: str, **flags: bool) -> Obj:
    return {"apiVersion": "kubeflow.org/v2beta1", "kind": "MPIJob", "name": name, "uid": uid, **flags}


def _condition(kind: str, status: str, **extra: Any) -> Obj:
    return {"type": kind, "status": status, "lastProbeTime": None, "lastTransitionTime": T1, **extra}


def _running(name: str) -> Obj:
    return {
        "phase": "Running",
        "conditions": [
            _condition(kind, "True")
            for kind in (
                "PodReadyToStartContainers",
                "Initialized",
                "Ready",
                "ContainersReady",
                "PodScheduled",
            )
        ],
        "hostIP": "192.168.0.10",
        "hostIPs": [{"ip": "192.168.0.10"}],
        "podIP": "10.0.0.7",
        "podIPs": [{"ip": "10.0.0.7"}],
        "startTime": T1,
        "containerStatuses": [
            {
                "name": "main",
                "state": {"running": {"startedAt": T1}},
                "lastState": {"terminated": {"exitCode": 137, "reason": "OOMKilled", "finishedAt": T1}},
                "ready": True,
                "restartCount": 3,
                "image": "busybox",
                "imageID": "docker-pullable://busybox@sha256:" + "1" * 64,
                "containerID": f"containerd://{name}",
                "started": True,
            }
        ],
    }


def _failed() -> Obj:
    return {
        "phase": "Failed",
        "reason": "Evicted",
        "message": "The node was low on resource: memory. Évincé ✓",
        "conditions": [
            _condition("Ready", "False", reason="PodFailed", message="containers exited"),
            _condition("DisruptionTarget", "True", reason="TerminationByKubelet", lastProbeTime=T2),
        ],
        "containerStatuses": [
            {
                "name": "main",
                "state": {
                    "terminated": {"exitCode": 1, "reason": "Error", "message": "boom", "startedAt": T1}
                },
                "lastState": {},
                "ready": False,
                "restartCount": 0,
                "image": "busybox",
                "imageID": "",
            }
        ],
    }


def _succeeded() -> Obj:
    done = {"terminated": {"exitCode": 0, "reason": "Completed", "startedAt": T1, "finishedAt": T2}}
    status = {"name": "main", "state": done, "lastState": {}, "ready": False, "restartCount": 0, "image": "b"}
    return {
        "phase": "Succeeded",
        "conditions": [
            _condition("Initialized", "True", reason="PodCompleted"),
            _condition("Ready", "False"),
        ],
        "initContainerStatuses": [{**status, "name": "setup", "imageID": ""}],
        "containerStatuses": [{**status, "imageID": ""}],
        "startTime": T1,
    }


def varied_pods() -> list[tuple[Obj, Obj | None]]:
    """(pod, status to write or None) for each pod, by name."""
    owners = [_owner("pi", "00000000-0000-4000-8000-000000000001", controller=True, blockOwnerDeletion=True)]
    return [
        ({"metadata": {"name": "pending", "labels": {"app": "a", "empty": ""}}, "spec": _spec()}, None),
        (
            {
                "metadata": {
                    "name": "running",
                    "labels": {
                        "training.kubeflow.org/job-name": "pi",
                        "training.kubeflow.org/job-role": "worker",
                    },
                    "annotations": {"note": "x" * 300},
                    "ownerReferences": owners,
                },
                "spec": _spec(),
            },
            _running("running"),
        ),
        (
            {
                "metadata": {
                    "name": "failed",
                    "ownerReferences": [
                        _owner("a", "00000000-0000-4000-8000-00000000000a", controller=False),
                        _owner("b", "00000000-0000-4000-8000-00000000000b"),
                    ],
                },
                "spec": _spec(),
            },
            _failed(),
        ),
        ({"metadata": {"name": "succeeded", "labels": {"k": "v"}}, "spec": _spec(True)}, _succeeded()),
        (
            {
                "metadata": {"name": "deleted", "finalizers": [FINALIZER], "ownerReferences": owners},
                "spec": _spec(),
            },
            _running("deleted"),
        ),
    ]


async def make_varied_pods(client: KubeClient, namespace: str) -> list[str]:
    """Create the pods in `namespace` in their states; the last is left deleting, held by a finalizer."""
    names: list[str] = []
    for pod, status in varied_pods():
        created = await client.create(PODS, pod, namespace)
        if status is not None:
            created["status"] = status
            await client.update_status(PODS, created, namespace)
        names.append(pod["metadata"]["name"])
    await client.delete(PODS, "deleted", namespace)
    return names


async def release_varied_pods(client: KubeClient, namespace: str) -> None:
    """Drop the finalizer that holds the deleted pod, so its namespace can go."""
    await client.patch(PODS, "deleted", {"metadata": {"finalizers": None}}, namespace)
