"""Fake nodes that kwok manages: plain Node objects with chosen capacity."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from mpioperator.testing.components import KWOK_NODE_ANNOTATION, KWOK_NODE_ANNOTATION_VALUE

# On a cluster with a real node, kwok nodes carry this taint, so pods run for real unless they ask for kwok.
KWOK_TAINT = {"key": KWOK_NODE_ANNOTATION, "value": KWOK_NODE_ANNOTATION_VALUE, "effect": "NoSchedule"}


@dataclass(frozen=True)
class NodeShape:
    cpu: str = "32"
    memory: str = "256Gi"
    pods: str = "110"
    extended: dict[str, str] = field(default_factory=dict)
    labels: dict[str, str] = field(default_factory=dict)


def fake_node(name: str, shape: NodeShape | None = None) -> dict[str, Any]:
    shape = shape or NodeShape()
    capacity = {"cpu": shape.cpu, "memory": shape.memory, "pods": shape.pods, **shape.extended}
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": name,
            "annotations": {
                KWOK_NODE_ANNOTATION: KWOK_NODE_ANNOTATION_VALUE,
                "node.alpha.kubernetes.io/ttl": "0",
            },
            "labels": {
                "type": "kwok",
                "kubernetes.io/hostname": name,
                "kubernetes.io/os": "linux",
                "kubernetes.io/arch": "amd64",
                **shape.labels,
            },
        },
        "spec": {},
        "status": {"capacity": dict(capacity), "allocatable": dict(capacity), "phase": "Running"},
    }


def node_ready(node: dict[str, Any]) -> bool:
    conditions = node.get("status", {}).get("conditions") or []
    return any(c.get("type") == "Ready" and c.get("status") == "True" for c in conditions)
