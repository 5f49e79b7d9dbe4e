"""The CRD keeps `status.progress` (mpioperator.io/progress) as the operator writes it, bounds its
metrics, and shows its text as PROGRESS under `kubectl get mpijobs -o wide` only."""

from __future__ import annotations

import json
from typing import Any

from mpioperator.testing.cluster import LocalCluster
from test.integration.manifests.test_crd_validation import base_job


def _write_progress(
    cluster: LocalCluster, ns: str, name: str, progress: dict[str, Any], *, check: bool = True
) -> str:
    patch = json.dumps({"status": {"progress": progress}})
    result = cluster.kubectl(
        "-n", ns, "patch", "mpijob", name, "--subresource=status", "--type=merge", "-p", patch, check=check
    )
    return result.stderr + result.stdout


def test_progress_shows_in_the_wide_table_only_and_its_fields_are_kept(
    crd_cluster: LocalCluster, make_namespace: Any
) -> None:
    ns = make_namespace(crd_cluster)
    crd_cluster.kubectl("-n", ns, "create", "-f", "-", input=json.dumps(base_job("train")))
    progress = {
        "done": 30,
        "total": 120,
        "percent": 25,
        "text": "30/120 (25%)",
        "metrics": {"loss": "0.25"},
        "lastUpdateTime": "2026-01-01T00:00:00Z",
    }
    _write_progress(crd_cluster, ns, "train", progress)

    wide = crd_cluster.kubectl("-n", ns, "get", "mpijobs", "-o", "wide").stdout
    narrow = crd_cluster.kubectl("-n", ns, "get", "mpijobs").stdout
    print(f"$ kubectl get mpijobs -o wide\n{wide}\n$ kubectl get mpijobs\n{narrow}")
    header, row = wide.splitlines()[0], wide.splitlines()[1]
    assert header.split()[-1] == "PROGRESS"
    assert row.endswith("30/120 (25%)")
    assert "PROGRESS" not in narrow
    kept = json.loads(crd_cluster.kubectl("-n", ns, "get", "mpijob", "train", "-o", "json").stdout)
    assert kept["status"]["progress"] == progress


def test_more_than_eight_metrics_or_a_percent_above_100_are_refused(
    crd_cluster: LocalCluster, make_namespace: Any
) -> None:
    ns = make_namespace(crd_cluster)
    crd_cluster.kubectl("-n", ns, "create", "-f", "-", input=json.dumps(base_job("train")))

    many = _write_progress(
        crd_cluster, ns, "train", {"done": 1, "metrics": {f"m{i}": "1" for i in range(9)}}, check=False
    )
    over = _write_progress(crd_cluster, ns, "train", {"done": 1, "percent": 101}, check=False)

    assert "status.progress.metrics: Too many: 9: must have at most 8 items" in many
    assert (
        "status.progress.percent: Invalid value: 101: progress.percent in body should be less than or equal to 100"
        in over
    )
