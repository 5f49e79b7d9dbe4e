"""The operator's Deployment probes: a startup probe guards the first start, liveness takes over after it,
and the one-file install carries the kustomize base's probes (the chart's are compared with the rendered
chart in test/integration/charts/test_helm_chart.py)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

REPO = Path(__file__).resolve().parents[3]
BASE = REPO / "manifests" / "base" / "deployment.yaml"
ONE_FILE = REPO / "deploy" / "v2beta1" / "mpi-operator.yaml"
PROBES = ("startupProbe", "livenessProbe", "readinessProbe")


def operator_container(documents: list[Any]) -> dict[str, Any]:
    (deployment,) = [d for d in documents if d and d.get("kind") == "Deployment"]
    (container,) = deployment["spec"]["template"]["spec"]["containers"]
    return dict(container)


def base_probes() -> dict[str, Any]:
    container = operator_container(list(yaml.safe_load_all(BASE.read_text())))
    return {name: container.get(name) for name in PROBES}


def test_a_startup_probe_on_healthz_gives_the_first_start_two_minutes_before_liveness_counts() -> None:
    probes = base_probes()
    startup = probes["startupProbe"]
    assert startup is not None, "no startupProbe"
    assert startup["httpGet"] == {"path": "/healthz", "port": "health"}
    assert startup["periodSeconds"] * startup["failureThreshold"] >= 120
    liveness = probes["livenessProbe"]
    assert liveness["httpGet"] == {"path": "/healthz", "port": "health"}
    assert "initialDelaySeconds" not in liveness  # the startup probe holds it back instead
    assert probes["readinessProbe"]["httpGet"] == {"path": "/readyz", "port": "health"}


def test_the_one_file_install_has_the_bases_probes() -> None:
    container = operator_container(list(yaml.safe_load_all(ONE_FILE.read_text())))
    assert {name: container.get(name) for name in PROBES} == base_probes()
