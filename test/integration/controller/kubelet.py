"""Pod statuses as the scheduler and a kubelet write them, for tests that play both on the apiserver tier."""

from __future__ import annotations

from typing import Any

from test.integration.controller.actors import Actors, now

Obj = dict[str, Any]


def unschedulable(message: str) -> Obj:
    """What kube-scheduler writes on a pod it cannot place."""
    return {
        "phase": "Pending",
        "conditions": [
            {
                "type": "PodScheduled",
                "status": "False",
                "reason": "Unschedulable",
                "message": message,
                "lastTransitionTime": now(),
            }
        ],
    }


def container(
    name: str,
    *,
    waiting: tuple[str, str] | None = None,
    terminated: tuple[str, int, str] | None = None,
    last_terminated: tuple[str, int, str] | None = None,
    running_since: str | None = None,
    ready: bool = False,
    restarts: int = 0,
    image: str = "mpioperator/mpi-pi:openmpi",
) -> Obj:
    """One containerStatuses entry: waiting (reason, message), terminated (reason, exit code, message)."""
    state: Obj
    if waiting is not None:
        state = {"waiting": {"reason": waiting[0], "message": waiting[1]}}
    elif terminated is not None:
        state = {"terminated": _terminated(*terminated)}
    else:
        state = {"running": {"startedAt": running_since or now()}}
    status: Obj = {
        "name": name,
        "state": state,
        "ready": ready,
        "restartCount": restarts,
        "image": image,
        "imageID": "",
        "started": waiting is None and terminated is None,
    }
    if last_terminated is not None:
        status["lastState"] = {"terminated": _terminated(*last_terminated)}
    return status


def _terminated(reason: str, code: int, message: str) -> Obj:
    return {"reason": reason, "exitCode": code, "message": message, "startedAt": now(), "finishedAt": now()}


def pod_status(phase: str, *containers: Obj, ready: bool = False) -> Obj:
    return {
        "phase": phase,
        "conditions": [
            {"type": "PodScheduled", "status": "True", "lastTransitionTime": now()},
            {"type": "Ready", "status": "True" if ready else "False", "lastTransitionTime": now()},
        ],
        "containerStatuses": list(containers),
    }


def write_pod_status(actors: Actors, pod: str, status: Obj) -> None:
    """Replace the pod's status (a merge patch would merge the conditions list by position)."""
    found = actors.get("pods", pod)
    assert found is not None, f"pod {pod} must exist"
    found["status"] = status
    actors.rest.request("PUT", actors.path("pods", pod) + "/status", found)
