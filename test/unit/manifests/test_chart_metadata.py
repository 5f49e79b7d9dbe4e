"""The chart's metadata describes this operator, not the Go operator it replaces."""

from __future__ import annotations

from pathlib import Path

import yaml

CHART = Path(__file__).resolve().parents[3] / "charts" / "mpi-operator" / "Chart.yaml"


def test_chart_metadata_points_at_no_other_projects_repository() -> None:
    metadata = yaml.safe_load(CHART.read_text())
    links = [metadata.get("home", ""), *metadata.get("sources", [])]
    assert not [link for link in links if "kubeflow/mpi-operator" in link], links
    assert metadata["name"] == "mpi-operator" and "mpioperator" in metadata["description"]
