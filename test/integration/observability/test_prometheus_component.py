"""manifests/overlays/prometheus (the standalone install plus manifests/components/prometheus) as kubectl
renders it: applied to the real API server with the Prometheus Operator's CRDs, and wired together (the
Service selects the operator's pods and port, the ServiceMonitor selects the Service, the ConfigMap carries
the dashboard for Grafana's sidecar, the PrometheusRule the alert rules)."""

from __future__ import annotations

import json
from typing import Any

import pytest
import yaml

from mpioperator.testing.cluster import LocalCluster
from mpioperator.testing.prometheus import COMPONENT, DASHBOARD, alert_rules, install_monitoring_crds

OVERLAY = COMPONENT.parents[1] / "overlays" / "prometheus"


@pytest.fixture(scope="module")
def rendered(apiserver_cluster: LocalCluster) -> list[dict[str, Any]]:
    install_monitoring_crds(apiserver_cluster)
    text = apiserver_cluster.kubectl("kustomize", str(OVERLAY)).stdout
    return [doc for doc in yaml.safe_load_all(text) if doc]


def one(objects: list[dict[str, Any]], kind: str, name: str) -> dict[str, Any]:
    (found,) = [o for o in objects if o["kind"] == kind and o["metadata"]["name"] == name]
    return found


def test_overlay_applies_as_readme_says(
    apiserver_cluster: LocalCluster, rendered: list[dict[str, Any]]
) -> None:
    result = apiserver_cluster.kubectl(
        "apply",
        "--server-side",
        "--force-conflicts",
        "-k",
        str(OVERLAY),
        check=False,
    )
    assert result.returncode == 0, result.stderr
    for applied in (
        "configmap/mpi-operator-dashboard",
        "service/mpi-operator-metrics",
        "prometheusrule.monitoring.coreos.com/mpi-operator",
        "servicemonitor.monitoring.coreos.com/mpi-operator",
    ):
        assert f"{applied} serverside-applied" in result.stdout, result.stdout
    assert len(result.stdout.splitlines()) == len(rendered)


def test_service_and_monitor_select_the_operators_metrics_port(rendered: list[dict[str, Any]]) -> None:
    deployment = one(rendered, "Deployment", "mpi-operator")
    service = one(rendered, "Service", "mpi-operator-metrics")
    monitor = one(rendered, "ServiceMonitor", "mpi-operator")
    pod_labels = deployment["spec"]["template"]["metadata"]["labels"]
    assert service["spec"]["selector"].items() <= pod_labels.items()
    (container,) = deployment["spec"]["template"]["spec"]["containers"]
    (port,) = [p for p in container["ports"] if p["name"] == service["spec"]["ports"][0]["targetPort"]]
    assert f"--monitoring-port={port['containerPort']}" in container["args"]
    assert monitor["spec"]["selector"]["matchLabels"].items() <= service["metadata"]["labels"].items()
    assert monitor["spec"]["endpoints"][0]["port"] == service["spec"]["ports"][0]["name"]
    assert service["metadata"]["labels"][monitor["spec"]["jobLabel"]] == "mpi-operator"
    namespaces = {o["metadata"].get("namespace") for o in (deployment, service, monitor)}
    assert namespaces == {"mpi-operator"}


def test_dashboard_and_rules_are_the_components_files(rendered: list[dict[str, Any]]) -> None:
    dashboard = one(rendered, "ConfigMap", "mpi-operator-dashboard")
    assert dashboard["metadata"]["labels"]["grafana_dashboard"] == "1"
    assert json.loads(dashboard["data"]["mpi-operator.json"]) == json.loads(DASHBOARD.read_text())
    assert one(rendered, "PrometheusRule", "mpi-operator")["spec"] == alert_rules()
