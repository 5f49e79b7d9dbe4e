"""Figures from the runs turned into the comparison: an aligned table with ratios and targets, and a chart."""

from __future__ import annotations

import math
import statistics
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from mpioperator.testing.audit import LEASES, Writes
from test.benchmarks.scale import STAGE_NAMES

Figures = dict[str, float]
MIB = 1024 * 1024


@dataclass(frozen=True)
class Metric:
    label: str
    unit: str
    value: Callable[[Figures], float]
    higher_is_better: bool
    target: float | None = None  # the ours/upstream ratio to reach; None for figures shown for context
    # True for a run that did not get there in time: its value is then a bound (a rate of at most).
    capped: Callable[[Figures], bool] = lambda f: False


@dataclass(frozen=True)
class Row:
    metric: Metric
    ours: float
    upstream: float
    ours_capped: bool = False
    upstream_capped: bool = False

    @property
    def ratio(self) -> float:
        return self.ours / self.upstream if self.upstream else float("nan")

    @property
    def comparable(self) -> bool:
        """A rate cut off still bounds the ratio; a cost of unfinished work says nothing about a lifecycle."""
        if self.ours_capped:
            return False
        return self.metric.higher_is_better or not self.upstream_capped

    @property
    def ratio_text(self) -> str:
        if self.ratio != self.ratio or not self.comparable:
            return "n/a" if not self.comparable else "-"
        # Only upstream capped: its rate is at most the figure, so ours/upstream is at least the ratio.
        return f"{'>' if self.upstream_capped else ''}{self.ratio:.2f}x"

    @property
    def verdict(self) -> str:
        target = self.metric.target
        if target is None or not self.comparable or self.ratio != self.ratio:
            return ""
        met = self.ratio >= target if self.metric.higher_is_better else self.ratio <= target
        sign = ">=" if self.metric.higher_is_better else "<="
        return f"{sign} {target:.1f}x {'met' if met else 'MISSED'}"


def _rate(jobs: float, seconds_key: str) -> Callable[[Figures], float]:
    """Jobs per second to reach a state; for a run cut off first, the rate it stayed below."""

    def rate(f: Figures) -> float:
        seconds = f[seconds_key]
        return jobs / (f["finish_within_s"] if math.isnan(seconds) else seconds)

    return rate


def _cut_off(count_key: str, jobs: int) -> Callable[[Figures], bool]:
    return lambda f: f.get(count_key, jobs) < jobs


def _per_paced_job(key: str, scale: float = 1.0) -> Callable[[Figures], float]:
    return lambda f: scale * f[key] / f["paced_jobs"]


def metrics(jobs: int, workers: int) -> list[Metric]:
    per_job = float(jobs)
    unfinished = _cut_off("succeeded_jobs", jobs)

    def paced_cut(f: Figures) -> bool:
        return f["paced_succeeded"] < f["paced_jobs"] or f.get("paced_workers_left", 0) > 0

    return [
        Metric(
            f"throughput {jobs}x{workers}: children", "jobs/s", lambda f: per_job / f["children_s"], True, 1.0
        ),
        Metric(
            "throughput: all Running",
            "jobs/s",
            _rate(per_job, "running_s"),
            True,
            1.0,
            _cut_off("running_jobs", jobs),
        ),
        Metric("throughput: all Succeeded", "jobs/s", _rate(per_job, "succeeded_s"), True, 1.0, unfinished),
        Metric("latency to launcher Job p50", "ms", lambda f: 1000 * f["latency_p50_s"], False),
        Metric("latency to launcher Job p99", "ms", lambda f: 1000 * f["latency_p99_s"], False, 1.0),
        # The burst's costs count a whole lifecycle only when every job finished within the run; the paced
        # run is where both finish every job, so its costs carry the targets.
        Metric(
            "writes per MPIJob, burst", "requests", lambda f: f["writes_per_job"], False, None, unfinished
        ),
        Metric("CPU per MPIJob, burst", "ms", lambda f: 1000 * f["cpu_s"] / per_job, False, None, unfinished),
        Metric("writes per MPIJob, paced", "requests", _per_paced_job("paced_writes"), False, 1.0, paced_cut),
        Metric("CPU per MPIJob, paced", "ms", _per_paced_job("paced_cpu_s", 1000), False, 1.0, paced_cut),
        Metric("peak RSS, throughput run", "MiB", lambda f: f["peak_rss_b"] / MIB, False),
    ]


def _stage_rate(stage: str) -> Callable[[Figures], float]:
    return lambda f: f[f"scale_{stage}_jobs"] / f[f"scale_{stage}_children_s"]


def _per_job_added(key: str, stages: Sequence[str], scale: float) -> Callable[[Figures], float]:
    """A cost spent while `stages` added their jobs, per job added."""
    return lambda f: (
        scale * sum(f[f"scale_{s}_{key}"] for s in stages) / sum(f[f"scale_{s}_jobs"] for s in stages)
    )


def _rss_per_job(low: str | None, high: str) -> Callable[[Figures], float]:
    """Resident memory added per job between two readings (`low` None: the ready contender with none)."""

    def per_job(f: Figures) -> float:
        base_rss = f["scale_base_rss_b"] if low is None else f[f"scale_{low}_rss_b"]
        base_jobs = 0.0 if low is None else _jobs_up_to(f, low)
        return (f[f"scale_{high}_rss_b"] - base_rss) / (_jobs_up_to(f, high) - base_jobs) / KIB

    return per_job


def _jobs_up_to(f: Figures, stage: str) -> float:
    total = 0.0
    for name in STAGE_NAMES:
        total += f[f"scale_{name}_jobs"]
        if name == stage:
            return total
    raise KeyError(stage)


KIB = 1024


def _restart_metrics(prefix: str, size: str, jobs: int) -> list[Metric]:
    """A restart's two figures (scale.restart's keys under `prefix`)."""
    return [
        Metric(f"start-up to ready, {size} (median)", "s", lambda f: f[f"{prefix}_ready_s"], False, 1.0),
        Metric(
            f"start-up to a new job's launcher, {jobs:,} jobs", "s", lambda f: f[f"{prefix}_probe_s"], False
        ),
    ]


def scale_metrics(stage_jobs: Sequence[int], workers: int, sharing: int = 1) -> list[Metric]:
    """The scale scenario's figures; `stage_jobs` are the jobs each stage added, for the labels.

    `sharing`: how many contenders took turns on the one cluster, each adding `stage_jobs` (1: each had a
    cluster of its own, as in runs before 2026-11-29, or only one ran).
    """
    if sharing > 1:
        return _shared_scale_metrics(stage_jobs, workers, sharing)
    first, second, third = stage_jobs
    at_first, at_restart, total = first, first + second, first + second + third
    pods = workers + 1

    def jobs(n: int) -> str:
        return f"{n:,} jobs / {n * pods:,} pods"

    return [
        Metric(f"children of the first {first:,} MPIJobs", "jobs/s", _stage_rate("first"), True, 1.0),
        Metric(
            f"children of {third:,} more ({at_restart:,} to {total:,})",
            "jobs/s",
            _stage_rate("rest"),
            True,
            1.0,
        ),
        Metric("RSS, ready, no jobs", "MiB", lambda f: f["scale_base_rss_b"] / MIB, False),
        Metric(f"RSS with {jobs(at_first)}", "MiB", lambda f: f["scale_first_rss_b"] / MIB, False),
        Metric(f"RSS with {jobs(total)}", "MiB", lambda f: f["scale_rest_rss_b"] / MIB, False, 0.5),
        *_restart_metrics("startup", jobs(at_restart), at_restart),
        *_restart_metrics("scale_startup", jobs(total), total),
        *_arrival_metrics(total),
        *_growth_cost_metrics("per job", f"first {at_first:,}", f"{at_first:,} to {total:,}"),
        Metric(f"RSS per job, 0 to {at_first:,}", "KiB", _rss_per_job(None, "first"), False),
        Metric(f"RSS per job, {at_first:,} to {total:,}", "KiB", _rss_per_job("first", "rest"), False),
    ]


def _growth_cost_metrics(per: str, first: str, rest: str) -> list[Metric]:
    """CPU and writes per job a contender added: in stage one (`first`), and in stages two and three."""
    later = ("restart", "rest")
    return [
        Metric(f"CPU {per}, {first}", "ms", _per_job_added("cpu_s", ("first",), 1000), False),
        Metric(f"CPU {per}, {rest}", "ms", _per_job_added("cpu_s", later, 1000), False),
        Metric(f"writes {per}, {first}", "requests", _per_job_added("writes", ("first",), 1), False),
        Metric(f"writes {per}, {rest}", "requests", _per_job_added("writes", later, 1), False),
    ]


def _arrival_metrics(among: int) -> list[Metric]:
    return [
        Metric(
            f"launcher Job p50, arrivals among {among:,}",
            "ms",
            lambda f: 1000 * f["scale_latency_p50_s"],
            False,
        ),
        Metric(
            f"launcher Job p99, arrivals among {among:,}",
            "ms",
            lambda f: 1000 * f["scale_latency_p99_s"],
            False,
            1.0,
        ),
    ]


def _started_rss_per_job(low: str | None, high: str, jobs: float) -> Callable[[Figures], float]:
    """Resident memory per job on the cluster between two readings of a contender started on it."""

    def per_job(f: Figures) -> float:
        base = f["scale_base_rss_b"] if low is None else f[f"scale_{low}_started_rss_b"]
        return (f[f"scale_{high}_started_rss_b"] - base) / jobs / KIB

    return per_job


def _shared_scale_metrics(stage_jobs: Sequence[int], workers: int, sharing: int) -> list[Metric]:
    """The figures of contenders in turn on one cluster: a stage's growth is each contender's own jobs,
    while the cluster (and so every cache, memory and start-up) holds all contenders' jobs."""
    first, second, third = stage_jobs
    pods = workers + 1
    at_first, at_restart, total = (sharing * n for n in (first, first + second, first + second + third))

    def jobs(n: int) -> str:
        return f"{n:,} jobs / {n * pods:,} pods"

    return [
        Metric(f"children of {first:,} MPIJobs, stage 1", "jobs/s", _stage_rate("first"), True, 1.0),
        Metric(
            f"children of {third:,} MPIJobs, stage 3 ({at_restart:,}+ on the cluster)",
            "jobs/s",
            _stage_rate("rest"),
            True,
            1.0,
        ),
        Metric("RSS, ready, no jobs", "MiB", lambda f: f["scale_base_rss_b"] / MIB, False),
        Metric(
            f"RSS started on {jobs(at_first)}", "MiB", lambda f: f["scale_first_started_rss_b"] / MIB, False
        ),
        Metric(
            f"RSS started on {jobs(total)}",
            "MiB",
            lambda f: f["scale_rest_started_rss_b"] / MIB,
            False,
            0.5,
        ),
        *_restart_metrics("startup", jobs(at_restart), at_restart),
        *_restart_metrics("scale_startup", jobs(total), total),
        *_arrival_metrics(total),
        *_growth_cost_metrics("per job added", f"stage 1 ({first:,})", f"stages 2-3 ({second + third:,})"),
        Metric(
            f"RSS per job on the cluster, 0 to {at_first:,}",
            "KiB",
            _started_rss_per_job(None, "first", at_first),
            False,
        ),
        Metric(
            f"RSS per job on the cluster, {at_first:,} to {total:,}",
            "KiB",
            _started_rss_per_job("first", "rest", total - at_first),
            False,
        ),
    ]


def median_of(runs: Sequence[Figures], metric: Metric) -> float:
    values = [metric.value(run) for run in runs if _has(run, metric)]
    return statistics.median(values) if values else float("nan")


def _has(run: Figures, metric: Metric) -> bool:
    try:
        metric.value(run)
    except (KeyError, ZeroDivisionError):
        return False
    return True


def rows(ours: Sequence[Figures], upstream: Sequence[Figures], jobs: int, workers: int) -> list[Row]:
    return rows_of(metrics(jobs, workers), ours, upstream)


def rows_of(chosen: Sequence[Metric], ours: Sequence[Figures], upstream: Sequence[Figures]) -> list[Row]:
    return [
        Row(
            m,
            median_of(ours, m),
            median_of(upstream, m),
            any(_has(run, m) and m.capped(run) for run in ours),
            any(_has(run, m) and m.capped(run) for run in upstream),
        )
        for m in chosen
    ]


@dataclass(frozen=True)
class Spread:
    """Per-round ratios of one metric (ours over upstream, the same round), around their median."""

    ratios: tuple[float, ...]

    @property
    def median(self) -> float:
        return statistics.median(self.ratios)

    @property
    def low(self) -> float:
        """How far the lowest round's ratio is below the median, as a fraction of it (<= 0)."""
        return min(self.ratios) / self.median - 1.0

    @property
    def high(self) -> float:
        return max(self.ratios) / self.median - 1.0

    def within(self, fraction: float) -> bool:
        return -fraction <= self.low and self.high <= fraction


def spread(metric: Metric, ours: Sequence[Figures], upstream: Sequence[Figures]) -> Spread | None:
    """Round n of ours against round n of upstream; None unless some round has both."""
    ratios = tuple(
        metric.value(o) / metric.value(u)
        for o, u in zip(ours, upstream, strict=False)
        if _has(o, metric) and _has(u, metric) and metric.value(u)
    )
    return Spread(ratios) if ratios else None


def format_spread(label: str, metric: Metric, ours: Sequence[Figures], upstream: Sequence[Figures]) -> str:
    found = spread(metric, ours, upstream)
    if found is None:
        return f"{label}: no round with both"
    values = ", ".join(
        f"{metric.value(o):.1f}/{metric.value(u):.1f}" for o, u in zip(ours, upstream, strict=False)
    )
    ratios = ", ".join(f"{r:.2f}x" for r in found.ratios)
    return (
        f"{label} by round, ours/upstream {metric.unit}: {values}; ratios {ratios}; "
        f"median {found.median:.2f}x, spread {found.low:+.0%} to {found.high:+.0%} of it "
        f"({'within' if found.within(0.10) else 'outside'} +-10%)"
    )


def _fmt(value: float) -> str:
    if value != value:  # NaN: the figure was not measured in these runs
        return "-"
    if value == float("inf"):  # some launcher never appeared: see the note under the table
        return "never"
    return f"{value:,.0f}" if abs(value) >= 100 else f"{value:,.2f}"


def format_table(table: Sequence[Row], *, names: tuple[str, str] = ("mpioperator", "upstream")) -> str:
    header = ("metric", "unit", names[0], names[1], "ratio", "target")
    lines = [header] + [
        (
            r.metric.label,
            r.metric.unit,
            _bounded(r.ours, r.ours_capped, r.metric),
            _bounded(r.upstream, r.upstream_capped, r.metric),
            r.ratio_text,
            r.verdict,
        )
        for r in table
    ]
    widths = [max(len(line[i]) for line in lines) for i in range(len(header))]
    out = []
    for n, line in enumerate(lines):
        cells = [
            c.ljust(w) if i < 2 else c.rjust(w) for i, (c, w) in enumerate(zip(line, widths, strict=True))
        ]
        out.append("  ".join(cells).rstrip())
        if n == 0:
            out.append("  ".join("-" * w for w in widths))
    return "\n".join(out)


def format_limit(ours_rate: float, upstream_rate: float, bare_rate: float) -> str:
    """Both operators' child-creation rates against the controller-less client's."""
    return "\n".join(
        [
            f"bare client (no controller, no rate limit): {bare_rate:.2f} jobs/s to all children",
            f"  mpioperator {ours_rate:.2f} jobs/s = {ours_rate / bare_rate:.2f}x the bare client (target >= 0.9x)",
            f"  upstream    {upstream_rate:.2f} jobs/s = {upstream_rate / bare_rate:.2f}x the bare client",
        ]
    )


def format_writes(ours: Writes, upstream: Writes, jobs: int, minimum: int) -> str:
    """Write requests per MPIJob by verb and resource, failed ones (conflicts, already-exists) in brackets."""
    keys = sorted(
        (k for k in set(ours.by_kind) | set(upstream.by_kind) if k[1] not in LEASES),
        key=lambda k: (k[1], k[0]),
    )

    def cell(w: Writes, key: tuple[str, str]) -> str:
        text = f"{w.by_kind.get(key, 0) / jobs:.2f}"
        failed = w.failed.get(key, 0)
        return f"{text} [{failed / jobs:.2f} failed]" if failed else text

    lines = [("verb", "resource", "mpioperator/job", "upstream/job")]
    lines += [
        (verb, resource, cell(ours, (verb, resource)), cell(upstream, (verb, resource)))
        for verb, resource in keys
    ]
    lines.append(
        (
            "total",
            "",
            f"{ours.total(excluding=LEASES) / jobs:.2f}",
            f"{upstream.total(excluding=LEASES) / jobs:.2f}",
        )
    )
    lines.append(("minimum", "", str(minimum), str(minimum)))
    widths = [max(len(line[i]) for line in lines) for i in range(4)]
    return "\n".join(
        "  ".join(c.ljust(w) for c, w in zip(line, widths, strict=True)).rstrip() for line in lines
    )


def _bounded(value: float, capped: bool, metric: Metric) -> str:
    """A cut-off run's rate is at most its figure; its cost of a whole lifecycle at least its figure."""
    if not capped:
        return _fmt(value)
    return ("<" if metric.higher_is_better else ">") + _fmt(value)


def draw_chart(table: Sequence[Row], path: Path, title: str) -> None:
    """One small bar pair per metric, each panel in its own unit."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    shown = [r for r in table if math.isfinite(r.ours) and math.isfinite(r.upstream)]
    columns = 4
    rows_needed = -(-len(shown) // columns)
    fig, axes = plt.subplots(rows_needed, columns, figsize=(4 * columns, 3.2 * rows_needed), squeeze=False)
    for ax, row in zip(axes.flat, shown, strict=False):
        bars = ax.bar(["mpioperator", "upstream"], [row.ours, row.upstream], color=["#2a7ab9", "#9a9a9a"])
        ax.bar_label(
            bars,
            labels=[
                _bounded(row.ours, row.ours_capped, row.metric),
                _bounded(row.upstream, row.upstream_capped, row.metric)
                + (" cut off" if row.upstream_capped else ""),
            ],
            fontsize=8,
        )
        better = "higher" if row.metric.higher_is_better else "lower"
        ax.set_title(f"{row.metric.label}\n({row.metric.unit}, {better} is better)", fontsize=9)
        ax.tick_params(labelsize=8)
        ax.margins(y=0.15)
    for ax in list(axes.flat)[len(shown) :]:
        ax.axis("off")
    fig.suptitle(title, fontsize=11)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
