"""Pods as the controller caches them, with the status a scheduler and kubelet write, for unit tests."""

from __future__ import annotations

import datetime as dt
from typing import Any

Obj = dict[str, Any]
NOW = dt.datetime(2026, 3, 4, 5, 6, 7, tzinfo=dt.UTC)


def stamp(seconds_ago: float = 0.0) -> str:
    return (NOW - dt.timedelta(seconds=seconds_ago)).strftime("%Y-%m-%dT%H:%M:%SZ")


def job_pod(
    name: str,
    phase: str = "Running",
    *,
    role: str = "worker",
    index: int = 0,
    containers: list[Obj] | None = None,
    conditions: list[Obj] | None = None,
    created: str = "2026-03-04T05:00:00Z",
) -> Obj:
    labels = {"training.kubeflow.org/job-role": role, "training.kubeflow.org/replica-index": str(index)}
    status: Obj = {"phase": phase}
    if containers is not None:
        status["containerStatuses"] = containers
    if conditions is not None:
        status["conditions"] = conditions
    return {"metadata": {"name": name, "labels": labels, "creationTimestamp": created}, "status": status}


def waiting(reason: str, message: str = "", *, restarts: int = 0, name: str = "c") -> Obj:
    return {
        "name": name,
        "state": {"waiting": {"reason": reason, "message": message}},
        "restartCount": restarts,
    }


def terminated(reason: str, code: int, message: str = "", *, name: str = "c") -> Obj:
    return {
        "name": name,
        "state": {"terminated": {"reason": reason, "exitCode": code, "message": message}},
        "restartCount": 0,
    }


def restarted(reason: str, code: int, *, seconds_ago: float, restarts: int = 1, message: str = "") -> Obj:
    """Running again after a container ended with `code`, started `seconds_ago`."""
    return {
        "name": "c",
        "state": {"running": {"startedAt": stamp(seconds_ago)}},
        "lastState": {"terminated": {"reason": reason, "exitCode": code, "message": message}},
        "restartCount": restarts,
        "ready": True,
    }


def ready(value: bool = True) -> list[Obj]:
    return [{"type": "Ready", "status": "True" if value else "False"}]


def unschedulable(message: str) -> list[Obj]:
    return [{"type": "PodScheduled", "status": "False", "reason": "Unschedulable", "message": message}]
