"""Watch event lines for MPIJob worker pods, as the API server sends them once kubelet has run the pods.

The pods come from the operator's own builder, then gain what the server and kubelet add: identity,
managedFields from three writers, and a Running status.
"""

from __future__ import annotations

import json

from mpioperator.api.objects import Obj
from mpioperator.controller.builders.worker_pod import new_worker
from test.unit.controller.jobs import reference_job

T = "2026-11-23T06:00:00Z"


def _managed_fields() -> list[Obj]:
    def entry(manager: str, operation: str, subresource: str | None, fields: Obj) -> Obj:
        out: Obj = {
            "manager": manager,
            "operation": operation,
            "apiVersion": "v1",
            "time": T,
            "fieldsType": "FieldsV1",
            "fieldsV1": fields,
        }
        if subresource:
            out["subresource"] = subresource
        return out

    spec_fields: Obj = {
        "f:metadata": {
            "f:labels": {".": {}, **{f"f:{k}": {} for k in ("a", "b", "c", "d")}},
            "f:ownerReferences": {".": {}, 'k:{"uid":"U"}': {}},
        },
        "f:spec": {
            "f:containers": {'k:{"name":"worker"}': {".": {}, "f:image": {}, "f:command": {}, "f:args": {}}},
            "f:hostname": {},
            "f:subdomain": {},
            "f:volumes": {".": {}, 'k:{"name":"ssh-auth"}': {".": {}, "f:secret": {}}},
        },
    }
    status_fields: Obj = {
        "f:status": {
            "f:conditions": {
                f'k:{{"type":"{t}"}}': {".": {}, "f:status": {}} for t in ("Ready", "Initialized")
            },
            "f:containerStatuses": {},
            "f:hostIP": {},
            "f:phase": {},
            "f:podIP": {},
            "f:podIPs": {".": {}, 'k:{"ip":"10.0.0.1"}': {".": {}, "f:ip": {}}},
            "f:startTime": {},
        }
    }
    return [
        entry("mpi-operator", "Update", None, spec_fields),
        entry("kube-scheduler", "Update", "status", {"f:status": {"f:conditions": {}}}),
        entry("kubelet", "Update", "status", status_fields),
    ]


def _running_status(index: int) -> Obj:
    ip = f"10.0.{index // 250}.{index % 250 + 1}"
    conditions = [
        {"type": t, "status": "True", "lastProbeTime": None, "lastTransitionTime": T}
        for t in ("PodReadyToStartContainers", "Initialized", "Ready", "ContainersReady", "PodScheduled")
    ]
    return {
        "phase": "Running",
        "conditions": conditions,
        "hostIP": "192.168.0.10",
        "hostIPs": [{"ip": "192.168.0.10"}],
        "podIP": ip,
        "podIPs": [{"ip": ip}],
        "startTime": T,
        "qosClass": "BestEffort",
        "containerStatuses": [
            {
                "name": "worker",
                "state": {"running": {"startedAt": T}},
                "lastState": {},
                "ready": True,
                "restartCount": 0,
                "image": "mpioperator/mpi-pi:openmpi",
                "imageID": "docker-pullable://mpioperator/mpi-pi@sha256:" + "0" * 64,
                "containerID": "containerd://" + f"{index:064x}",
                "started": True,
            }
        ],
    }


def worker_pod(index: int) -> Obj:
    """Worker `index` of a 1000-worker job, as stored and served once it runs."""
    job = reference_job(workers=1000)
    pod = new_worker(job, index)
    meta = pod["metadata"]
    meta.update(
        uid=f"00000000-0000-4000-8000-{index:012d}",
        resourceVersion=str(1000 + index),
        creationTimestamp=T,
        managedFields=_managed_fields(),
    )
    pod["spec"].update(
        nodeName=f"node-{index % 100}",
        dnsPolicy="ClusterFirst",
        schedulerName="default-scheduler",
        terminationGracePeriodSeconds=30,
        serviceAccountName="default",
        enableServiceLinks=True,
        priority=0,
        preemptionPolicy="PreemptLowerPriority",
    )
    pod["status"] = _running_status(index)
    return pod


def watch_lines(count: int) -> list[bytes]:
    """`count` ADDED events, one JSON line each, as a watch response body carries them."""
    return [
        json.dumps({"type": "ADDED", "object": worker_pod(i)}, separators=(",", ":")).encode()
        for i in range(count)
    ]
