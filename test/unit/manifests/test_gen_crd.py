"""hack/gen_crd.py turns OpenAPI into a structural CRD schema, and the committed CRD has the shape upstream's
has (§1.10, §5.7) plus our enums (D5 #2) and stays small enough for client-side `kubectl apply`."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from mpioperator.controller.phase import PHASES
from mpioperator.controller.tasks import AGGREGATE_KEYS, MAX_TASK_PODS
from test.unit.manifests.hack_scripts import load_hack_script

REPO = Path(__file__).resolve().parents[3]
CRD_PATH = REPO / "manifests" / "base" / "kubeflow.org_mpijobs.yaml"
Schema = dict[str, Any]


gen_crd = load_hack_script("gen_crd")


def resolve(schemas: dict[str, Schema], root: str) -> Schema:
    resolved: Schema = gen_crd.Resolver({"components": {"schemas": schemas}}).named(root)
    return resolved


def nodes(schema: Any, path: str = "") -> Iterator[tuple[str, Schema]]:
    """Every schema node with its path (properties, items, additionalProperties, anyOf)."""
    if not isinstance(schema, dict):
        return
    yield path, schema
    for name, child in (schema.get("properties") or {}).items():
        yield from nodes(child, f"{path}.{name}")
    for key in ("items", "additionalProperties"):
        if isinstance(schema.get(key), dict):
            yield from nodes(schema[key], f"{path}[{key}]")
    for i, child in enumerate(schema.get("anyOf") or ()):
        yield from nodes(child, f"{path}<anyOf{i}>")


@pytest.fixture(scope="module")
def crd() -> Schema:
    loaded: Schema = yaml.safe_load(CRD_PATH.read_text())
    return loaded


@pytest.fixture(scope="module")
def root(crd: Schema) -> Schema:
    found: Schema = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    return found


def replica_spec(root: Schema) -> Schema:
    found: Schema = root["properties"]["spec"]["properties"]["mpiReplicaSpecs"]["additionalProperties"]
    return found


def test_refs_are_inlined_and_descriptions_enums_and_patch_hints_dropped() -> None:
    schemas: dict[str, Schema] = {
        "io.k8s.api.core.v1.Thing": {
            "description": "a thing",
            "type": "object",
            "required": ["name"],
            "properties": {
                "name": {"type": "string", "default": "", "description": "its name"},
                "protocol": {"type": "string", "default": "TCP", "enum": ["TCP", "UDP"]},
                "parts": {
                    "type": "array",
                    "items": {"allOf": [{"$ref": "#/components/schemas/io.k8s.api.core.v1.Part"}]},
                    "x-kubernetes-list-type": "map",
                    "x-kubernetes-list-map-keys": ["id"],
                    "x-kubernetes-patch-strategy": "merge",
                    "x-kubernetes-patch-merge-key": "id",
                },
                "size": {"$ref": "#/components/schemas/io.k8s.apimachinery.pkg.api.resource.Quantity"},
            },
        },
        "io.k8s.api.core.v1.Part": {"type": "object", "properties": {"id": {"type": "integer"}}},
    }
    thing = resolve(schemas, "io.k8s.api.core.v1.Thing")
    assert thing == {
        "type": "object",
        "required": ["name"],
        "properties": {
            "name": {"type": "string"},
            "parts": {
                "type": "array",
                "items": {"type": "object", "properties": {"id": {"type": "integer"}}},
                "x-kubernetes-list-type": "map",
                "x-kubernetes-list-map-keys": ["id"],
            },
            "protocol": {"type": "string", "default": "TCP"},
            "size": thing["properties"]["size"],
        },
    }
    assert thing["properties"]["size"]["x-kubernetes-int-or-string"] is True


def test_committed_crd_fits_the_client_side_apply_annotation(crd: Schema) -> None:
    # kubectl apply (client-side) copies the object into an annotation limited to 262144 bytes.
    assert len(json.dumps(crd, separators=(",", ":"))) < 262144 * 0.75


def test_every_schema_node_is_structural(root: Schema) -> None:
    untyped = [
        path
        for path, node in nodes(root)
        if "type" not in node
        and not node.get("x-kubernetes-int-or-string")
        and not node.get("x-kubernetes-preserve-unknown-fields")
        and "<anyOf" not in path.rsplit(".", 1)[-1]
    ]
    assert untyped == []


def test_pod_template_has_no_descriptions_enums_refs_or_patch_hints(root: Schema) -> None:
    template = replica_spec(root)["properties"]["template"]["properties"]
    offending = [
        f"{path}:{key}"
        for path, node in nodes(template)
        for key in node
        if key in ("description", "enum", "$ref") or key.startswith("x-kubernetes-patch")
    ]
    assert offending == []


def test_embedded_template_metadata_keeps_only_upstreams_five_fields(root: Schema) -> None:
    metadata = replica_spec(root)["properties"]["template"]["properties"]["metadata"]
    assert sorted(metadata["properties"]) == ["annotations", "finalizers", "labels", "name", "namespace"]


def test_quantities_in_pod_templates_are_int_or_string(root: Schema) -> None:
    container = replica_spec(root)["properties"]["template"]["properties"]["spec"]["properties"]["containers"]
    limits = container["items"]["properties"]["resources"]["properties"]["limits"]["additionalProperties"]
    assert limits["x-kubernetes-int-or-string"] is True
    assert container["x-kubernetes-list-type"] == "map"
    assert container["x-kubernetes-list-map-keys"] == ["name"]


def test_mpijob_level_defaults_are_exactly_upstreams_crd_defaults(root: Schema) -> None:
    spec = root["properties"]["spec"]
    outside_templates = {
        path: node["default"] for path, node in nodes(spec) if "default" in node and ".template" not in path
    }
    assert outside_templates == {
        ".launcherCreationPolicy": "AtStartup",
        ".mpiImplementation": "OpenMPI",
        ".runLauncherAsWorker": False,
        ".runPolicy.suspend": False,
        ".slotsPerWorker": 1,
        ".sshAuthMountPath": "/root/.ssh",
    }


def test_enumerated_fields_list_exactly_the_values_upstream_accepts(root: Schema) -> None:
    spec = root["properties"]["spec"]["properties"]
    run_policy = spec["runPolicy"]["properties"]
    assert spec["mpiImplementation"]["enum"] == ["OpenMPI", "Intel", "MPICH"]
    assert spec["launcherCreationPolicy"]["enum"] == ["AtStartup", "WaitForWorkersReady"]
    assert run_policy["cleanPodPolicy"]["enum"] == ["None", "Running", "All"]
    assert run_policy["managedBy"]["enum"] == ["kubeflow.org/mpi-operator", "kueue.x-k8s.io/multikueue"]
    assert replica_spec(root)["properties"]["restartPolicy"]["enum"] == ["Never", "OnFailure"]


def test_crd_serves_one_version_with_status_subresource_and_printer_columns(crd: Schema) -> None:
    (version,) = crd["spec"]["versions"]
    assert (version["name"], version["served"], version["storage"]) == ("v2beta1", True, True)
    # Ours (decisions-local L50): kubectl scale and an autoscaler set the worker count.
    assert version["subresources"] == {
        "status": {},
        "scale": {
            "specReplicasPath": ".spec.mpiReplicaSpecs.Worker.replicas",
            "statusReplicasPath": ".status.replicaStatuses.Worker.active",
            "labelSelectorPath": ".status.replicaStatuses.Worker.selector",
        },
    }
    columns = version["additionalPrinterColumns"]
    assert [c["name"] for c in columns if not c.get("priority")] == ["Phase", "State", "Workers", "Age"]
    # `kubectl get -o wide` adds the pods by phase, from status.aggregate, and the progress.
    assert [c["jsonPath"] for c in columns if c.get("priority") == 1] == [
        ".status.aggregate.running",
        ".status.aggregate.pending",
        ".status.aggregate.failed",
        ".status.progress.text",
    ]
    assert crd["spec"]["names"] == {
        "kind": "MPIJob",
        "listKind": "MPIJobList",
        "plural": "mpijobs",
        "singular": "mpijob",
    }
    assert crd["spec"]["scope"] == "Namespaced"


def test_status_declares_our_phase_pod_counts_and_bounded_unhealthy_pods(root: Schema) -> None:
    """Without them in the schema the API server would prune what the operator writes (issue 17)."""
    status = root["properties"]["status"]["properties"]
    assert status["phase"]["enum"] == list(PHASES)
    counts = status["podCounts"]["additionalProperties"]["properties"]
    assert sorted(counts) == ["failed", "pending", "ready", "restarts", "running", "succeeded"]
    assert status["unhealthyPods"]["maxItems"] == 10
    assert sorted(status["unhealthyPods"]["items"]["properties"]) == [
        "name",
        "reason",
        "replicaType",
        "restarts",
    ]


def test_status_declares_t9ks_aggregate_and_tasks_bounded_as_the_operator_bounds_them(root: Schema) -> None:
    status = root["properties"]["status"]["properties"]
    assert tuple(status["aggregate"]["properties"]) == AGGREGATE_KEYS
    task = status["tasks"]["items"]["properties"]
    assert sorted(task) == ["pods", "restartCount", "truncated", "type"]
    assert task["pods"]["maxItems"] == MAX_TASK_PODS
    assert sorted(task["pods"]["items"]["properties"]) == ["deleting", "name", "phase", "restartCount", "uid"]


def test_status_conditions_are_a_list_map_keyed_by_type(root: Schema) -> None:
    conditions = root["properties"]["status"]["properties"]["conditions"]
    assert conditions["x-kubernetes-list-type"] == "map"
    assert conditions["x-kubernetes-list-map-keys"] == ["type"]
    assert conditions["items"]["required"] == ["status", "type"]
    assert conditions["items"]["properties"]["status"]["enum"] == ["True", "False", "Unknown"]
