"""Our additions to the MPIJob CRD (docs/extensions.md), beside upstream's schema in gen_crd.py: the status
fields our extensions write, the PROGRESS column and the scale subresource (typed readers of upstream's
status ignore these fields), and `desc`, which both use."""

from __future__ import annotations

from typing import Any

Schema = dict[str, Any]


def desc(text: str, schema: Schema) -> Schema:
    return {"description": text, **schema}


def extension_status() -> Schema:
    """Ours (docs/extensions.md): typed readers of upstream's status ignore these fields."""
    count = {"type": "integer", "format": "int32", "minimum": 0}
    pod_counts = {
        "type": "object",
        "properties": {
            name: count for name in ("pending", "running", "ready", "succeeded", "failed", "restarts")
        },
    }
    return {
        "phase": desc(
            "The job in one word, read off its conditions.",
            {
                "type": "string",
                "enum": ["Pending", "Running", "Suspended", "Resuming", "Unknown", "Succeeded", "Failed"],
            },
        ),
        "aggregate": desc(
            "The job's pods counted once each, job-wide: not made yet (creating), being deleted (deleted), "
            "else by phase.",
            {
                "type": "object",
                "properties": {
                    name: count
                    for name in (
                        "creating",
                        "pending",
                        "running",
                        "succeeded",
                        "failed",
                        "unknown",
                        "deleted",
                    )
                },
            },
        ),
        "tasks": desc(
            "Per replica type, its pods' names, uids, phases and restarts: at most 32 of each type (workers "
            "by index, the launcher's newest first), `truncated` saying how many more there are.",
            {
                "type": "array",
                "maxItems": 2,
                "x-kubernetes-list-type": "atomic",
                "items": {
                    "type": "object",
                    "required": ["type"],
                    "properties": {
                        "type": {"type": "string"},
                        "restartCount": count,
                        "truncated": count,
                        "pods": {
                            "type": "array",
                            "maxItems": 32,
                            "x-kubernetes-list-type": "atomic",
                            "items": {
                                "type": "object",
                                "required": ["name"],
                                "properties": {
                                    "name": {"type": "string"},
                                    "uid": {"type": "string"},
                                    "phase": {"type": "string"},
                                    "restartCount": count,
                                    "deleting": {"type": "boolean"},
                                },
                            },
                        },
                    },
                },
            },
        ),
        "podCounts": desc(
            "Pods per replica type (Launcher, Worker) by phase, the Ready ones, and their restarts.",
            {"type": "object", "additionalProperties": pod_counts},
        ),
        "restarts": desc(
            "Whole-job restarts done so far (mpioperator.io/restart-policy); the running attempt's number.",
            count,
        ),
        "restartDelaySeconds": desc(
            "The back-off before the current attempt (mpioperator.io/restart-policy), in seconds.",
            count,
        ),
        "nextAttemptTime": desc(
            "The earliest time the current attempt's pods are made, after a whole-job restart's back-off.",
            {"type": "string", "format": "date-time"},
        ),
        "unhealthyPods": desc(
            "Up to 10 pods that cannot start or keep crashing, launcher first, then workers by index.",
            {
                "type": "array",
                "maxItems": 10,
                "x-kubernetes-list-type": "atomic",
                "items": {
                    "type": "object",
                    "required": ["name", "replicaType", "reason"],
                    "properties": {
                        "name": {"type": "string"},
                        "replicaType": {"type": "string"},
                        "reason": {"type": "string"},
                        "restarts": count,
                    },
                },
            },
        ),
    }


def last_words_status() -> Schema:
    """Ours (docs/extensions.md): the failed rank and the last lines of its worker's and the launcher's
    logs, kept after cleanup (controller/features/last_words.py)."""
    lines = {
        "type": "object",
        "required": ["pod"],
        "properties": {
            "pod": {"type": "string"},
            "lines": {
                "type": "array",
                "maxItems": 20,
                "x-kubernetes-list-type": "atomic",
                "items": {"type": "string", "maxLength": 2048},
            },
        },
    }
    return {
        "lastWords": desc(
            "Set once the launcher failed: the rank mpirun named, its pod, node and exit code or signal, "
            "and the last lines (at most 20 of 2 KiB) of that worker's log and of the launcher's.",
            {
                "type": "object",
                "properties": {
                    "rank": {"type": "integer", "format": "int32", "minimum": 0},
                    "exitCode": {"type": "integer", "format": "int32"},
                    "signal": {"type": "integer", "format": "int32"},
                    "signalName": {"type": "string"},
                    "pod": {"type": "string"},
                    "node": {"type": "string"},
                    "launcher": lines,
                    "worker": lines,
                },
            },
        )
    }


def scale_subresource() -> Schema:
    """Ours (docs/extensions.md): `kubectl scale` and a HorizontalPodAutoscaler set the worker count; the
    status counts the running workers and names their selector (written for jobs with elastic bounds)."""
    return {
        "specReplicasPath": ".spec.mpiReplicaSpecs.Worker.replicas",
        "statusReplicasPath": ".status.replicaStatuses.Worker.active",
        "labelSelectorPath": ".status.replicaStatuses.Worker.selector",
    }


def progress_status() -> Schema:
    """mpioperator.io/progress (docs/extensions.md): how far the job has got, read off its launcher's log."""
    number = {"type": "number", "minimum": 0}
    return {
        "progress": desc(
            "How far the job has got, from its launcher's log (mpioperator.io/progress).",
            {
                "type": "object",
                "properties": {
                    "done": number,
                    "total": number,
                    "percent": {"type": "integer", "minimum": 0, "maximum": 100},
                    "text": {"type": "string", "maxLength": 64},
                    "metrics": {
                        "type": "object",
                        "maxProperties": 8,
                        "additionalProperties": {"type": "string", "maxLength": 63},
                    },
                    "lastUpdateTime": {"type": "string", "format": "date-time"},
                },
            },
        ),
    }


def progress_column() -> Schema:
    """`-o wide`: the job's progress as its status last said (mpioperator.io/progress)."""
    return {"name": "Progress", "type": "string", "jsonPath": ".status.progress.text", "priority": 1}
