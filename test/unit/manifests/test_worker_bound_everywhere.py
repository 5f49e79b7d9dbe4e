"""The CRD's maximum on replicas and the chart's bound on maxWorkerReplicas are the computed ceiling, and the
numbers the docs give are the computed bounds, so none of them drifts when the hostfile changes."""

from __future__ import annotations

import json
from pathlib import Path

import yaml

from mpioperator.controller.builders.configmap import max_worker_replicas, worker_replicas_ceiling

REPO = Path(__file__).resolve().parents[3]


def test_crd_and_chart_bound_workers_at_the_ceiling() -> None:
    crd = yaml.safe_load((REPO / "manifests/base/kubeflow.org_mpijobs.yaml").read_text())
    spec = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]
    replica = spec["properties"]["mpiReplicaSpecs"]["additionalProperties"]
    assert replica["properties"]["replicas"]["maximum"] == worker_replicas_ceiling()
    schema = json.loads((REPO / "charts/mpi-operator/values.schema.json").read_text())
    assert schema["properties"]["maxWorkerReplicas"]["maximum"] == worker_replicas_ceiling()


def test_docs_give_the_computed_bounds() -> None:
    numbers = {
        str(worker_replicas_ceiling()),
        str(max_worker_replicas("")),
        str(max_worker_replicas("cluster.local")),
    }
    for doc in ("docs/install.md", "docs/extensions.md"):
        text = (REPO / doc).read_text()
        assert {n for n in numbers if n in text} == numbers, doc
