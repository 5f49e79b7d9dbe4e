"""Fake nodes that kwok manages: plain Node objects with chosen capacity, created and deleted on a cluster."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import Any

from mpioperator.testing.components import KWOK_NODE_ANNOTATION, KWOK_NODE_ANNOTATION_VALUE
from mpioperator.testing.rest import RestClient, RestError
from mpioperator.testing.wait import wait_for

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


def node_is_ready(rest: RestClient, name: str) -> bool:
    try:
        return node_ready(rest.get(f"/api/v1/nodes/{name}"))
    except RestError as err:
        if err.status == 404:
            return False
        raise


def create_ready_nodes(rest: RestClient, nodes: Sequence[dict[str, Any]], timeout: float = 60.0) -> list[str]:
    """Create the nodes, then wait until each is Ready (kwok marks them); their names."""
    names = []
    for node in nodes:
        rest.create("/api/v1/nodes", node)
        names.append(node["metadata"]["name"])
    for name in names:
        wait_for(partial(node_is_ready, rest, name), timeout=timeout, what=f"node {name} to become Ready")
    return names


def delete_nodes(rest: RestClient, names: Sequence[str], timeout: float = 60.0) -> None:
    """Delete the nodes and wait until they are gone."""
    for name in names:
        try:
            rest.delete(f"/api/v1/nodes/{name}")
        except RestError as err:
            if err.status != 404:
                raise

    def left() -> list[str]:
        present = {n["metadata"]["name"] for n in rest.get("/api/v1/nodes")["items"]}
        return [name for name in names if name in present]

    what = f"nodes {', '.join(names)} deleted"
    wait_for(left, timeout=timeout, what=what, done=lambda remaining: not remaining)
