"""The Grafana dashboard's panels as data, and a picture of them drawn from a real Prometheus.

Grafana is not needed to see what the dashboard shows: each panel's queries run against Prometheus's
HTTP API over the same time range and are drawn with matplotlib (the `bench` extra), in the dashboard's
own grid, into one PNG.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mpioperator.testing.prometheus import DASHBOARD, LocalPrometheus


@dataclass(frozen=True)
class Target:
    expr: str
    legend: str


@dataclass(frozen=True)
class Panel:
    title: str
    kind: str
    unit: str
    grid: tuple[int, int, int, int]
    """x, y, width, height in Grafana's 24-column grid."""
    targets: tuple[Target, ...]


def load_panels(path: Path = DASHBOARD) -> list[Panel]:
    """Every panel with queries (rows left out), in the dashboard's order."""
    dashboard = json.loads(path.read_text())
    panels = []
    for raw in dashboard["panels"]:
        if raw.get("type") == "row":
            continue
        pos = raw["gridPos"]
        unit = (raw.get("fieldConfig") or {}).get("defaults", {}).get("unit", "")
        targets = tuple(Target(t["expr"], t.get("legendFormat", "")) for t in raw.get("targets", []))
        grid = (pos["x"], pos["y"], pos["w"], pos["h"])
        panels.append(Panel(raw["title"], raw["type"], unit, grid, targets))
    return panels


def legend(template: str, labels: dict[str, str]) -> str:
    """Grafana's legend format: `{{label}}` replaced by the series' label value."""
    if not template:
        return ", ".join(f"{k}={v}" for k, v in sorted(labels.items()) if k != "__name__") or "value"
    return re.sub(r"\{\{\s*(\w+)\s*\}\}", lambda m: labels.get(m.group(1), ""), template)


def format_value(value: float, unit: str) -> str:
    if math.isnan(value):
        return "NaN"
    if unit == "s":
        return f"{value:.3g} s" if value < 120 else f"{value / 60:.3g} min"
    if unit == "percentunit":
        return f"{value * 100:.3g} %"
    if unit == "bytes":
        return f"{value / 2**20:.3g} MiB"
    return f"{value:.3g}"


def render(
    prometheus: LocalPrometheus,
    panels: list[Panel],
    *,
    start: float,
    end: float,
    out: Path,
    title: str,
) -> dict[str, int]:
    """Draw every panel over [start, end] into `out`; returns each panel's number of series drawn."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = max(p.grid[1] + p.grid[3] for p in panels)
    top = min(p.grid[1] for p in panels)
    figure = plt.figure(figsize=(24, (rows - top) * 0.75), dpi=80)
    figure.suptitle(title, fontsize=16, x=0.01, ha="left")
    spec = figure.add_gridspec(
        rows - top, 24, hspace=2.2, wspace=0.8, top=0.96, bottom=0.03, left=0.03, right=0.99
    )
    step = max(1.0, (end - start) / 240)
    drawn: dict[str, int] = {}
    for panel in panels:
        x, y, w, h = panel.grid
        axes = figure.add_subplot(spec[y - top : y - top + h, x : x + w])
        axes.set_title(panel.title, fontsize=11, loc="left")
        series = [
            (legend(target.legend, result["metric"]), result)
            for target in panel.targets
            for result in prometheus.query_range(target.expr, start, end, step)
        ]
        drawn[panel.title] = len(series)
        if panel.kind == "stat":
            _stat(axes, series, panel.unit)
        else:
            _timeseries(axes, series, panel.unit, start, step)
    out.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(out)
    plt.close(figure)
    return drawn


_SCALE = {
    "percentunit": (100.0, "%"),
    "bytes": (1 / 2**20, "MiB"),
    "s": (1.0, "seconds"),
    "ops": (1.0, "per second"),
}


def _points(result: dict[str, Any], step: float) -> tuple[list[float], list[float]]:
    """Times and values, with a NaN wherever samples are missing so the line breaks instead of bridging
    the gap (a replica that was down, a series that did not exist yet)."""
    times: list[float] = []
    values: list[float] = []
    for stamp, value in result["values"]:
        t = float(stamp)
        if times and t - times[-1] > 1.5 * step:
            times.append(times[-1] + step)
            values.append(math.nan)
        times.append(t)
        values.append(float(value))
    return times, values


def _stat(axes: Any, series: list[tuple[str, dict[str, Any]]], unit: str) -> None:
    axes.set_axis_off()
    last = [float(result["values"][-1][1]) for _, result in series if result["values"]]
    text = format_value(sum(last), unit) if last else "no data"
    axes.text(0.5, 0.35, text, ha="center", va="center", fontsize=26, transform=axes.transAxes)


def _timeseries(
    axes: Any, series: list[tuple[str, dict[str, Any]]], unit: str, start: float, step: float
) -> None:
    factor, label = _SCALE.get(unit, (1.0, unit))
    for name, result in series:
        times, values = _points(result, step)
        axes.plot([(t - start) / 60 for t in times], [v * factor for v in values], label=name, linewidth=1.4)
    axes.set_xlabel("minutes into the run", fontsize=8)
    axes.tick_params(labelsize=8)
    axes.grid(alpha=0.3)
    if label:
        axes.set_ylabel(label, fontsize=8)
    if series:
        axes.legend(fontsize=7, loc="upper left")
    else:
        axes.text(0.5, 0.5, "no data", ha="center", va="center", transform=axes.transAxes)
