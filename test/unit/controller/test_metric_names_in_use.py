"""The dashboard, the alert rules and docs/observe.md name only series the operator really exports, and
the docs' metrics table lists every one of them."""

from __future__ import annotations

import datetime as dt
import json
import re
from pathlib import Path

import yaml
from prometheus_client import CollectorRegistry

from mpioperator.controller.metrics import JobMetrics
from mpioperator.controller.state_metrics import JobStateCollector
from mpioperator.workqueue.metrics import PrometheusMetricsProvider

REPO = Path(__file__).resolve().parents[3]
COMPONENT = REPO / "manifests" / "components" / "prometheus"
# Our own series; process_* and python_* come from prometheus_client's default collectors.
OURS = re.compile(r"\b((?:mpi_operator|workqueue)_[a-z_]+)")
HISTOGRAM_PARTS = ("_bucket", "_count", "_sum")


def exported() -> dict[str, str]:
    """Exposed series name -> type, for the operator's own families (histogram parts included)."""
    registry = CollectorRegistry()
    JobMetrics(registry)
    PrometheusMetricsProvider(registry).for_queue("MPIJob")
    registry.register(JobStateCollector(lambda: [], lambda: dt.datetime.now(dt.UTC)))
    names = {}
    for family in registry.collect():
        if family.type == "counter":
            names[f"{family.name}_total"] = "counter"
        elif family.type == "histogram":
            names[family.name] = "histogram"
            names.update({f"{family.name}{part}": "histogram" for part in HISTOGRAM_PARTS})
        else:
            names[family.name] = family.type
    return names


def used_in_dashboard() -> set[str]:
    dashboard = json.loads((COMPONENT / "dashboard.json").read_text())
    exprs = [t["expr"] for p in dashboard["panels"] for t in p.get("targets", [])]
    return {name for expr in exprs for name in OURS.findall(expr)}


def used_in_alerts() -> set[str]:
    rules = yaml.safe_load((COMPONENT / "prometheus-rule.yaml").read_text())["spec"]["groups"]
    return {name for group in rules for rule in group["rules"] for name in OURS.findall(rule["expr"])}


def documented() -> set[str]:
    """Names in the first column of docs/observe.md's metrics table."""
    text = (REPO / "docs" / "observe.md").read_text()
    return set(re.findall(r"^\| `((?:mpi_operator|workqueue)_[a-z_]+)`", text, flags=re.MULTILINE))


def test_dashboard_and_alerts_use_only_exported_series() -> None:
    names = exported()
    assert used_in_dashboard() - names.keys() == set()
    assert used_in_alerts() - names.keys() == set()
    assert {"mpi_operator_jobs", "mpi_operator_is_leader", "workqueue_depth"} <= used_in_dashboard()


def test_docs_table_lists_exactly_the_exported_families() -> None:
    families = {n for n in exported() if not n.endswith(HISTOGRAM_PARTS)}
    assert documented() == families
