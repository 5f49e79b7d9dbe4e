"""mpioperator side by side with upstream's Go operator, on the same local cluster build (issues 8, 22).

Two comparisons, each in alternating rounds: both operators with their work-queue limits raised until
they do not bind (the fair fight of their work per event), and both with the defaults users get. Each
round starts a fresh full-tier cluster per contender (so neither inherits the other's objects or caches)
and runs the same scenarios with the same QPS, burst and worker settings; the bare-client limit runs once
per round of the first comparison, on a cluster of its own. Then the scale scenario
(test/benchmarks/scale.py) runs both on ONE cluster, in turn: one operator at a time, each holding both
operators' jobs in its caches, so neither meets a cluster less busy than the other's.

    .venv/bin/python -m test.benchmarks.bench_operators --out bench-results
    (or hack/bench-operators.sh, which also installs the chart's dependency and builds upstream)
"""

from __future__ import annotations

import argparse
import json
import platform
import shutil
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import TypedDict

from mpioperator.testing.audit import LEASES, Writes, minimum_writes_per_job
from test.benchmarks import report, scale, scenarios
from test.benchmarks.contenders import (
    DEFAULT_QUEUE,
    RAISED_QUEUE,
    Contender,
    Ours,
    QueueLimits,
    Settings,
    Upstream,
    build_upstream,
)
from test.benchmarks.paced import CLEAN_UP_S, PACED_JOB_TIMEOUT_S, paced
from test.benchmarks.scenarios import Bench, Figures


def log(message: str) -> None:
    print(f"[bench {time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


def dir_factory(root: Path, prefix: str) -> Callable[[], Path]:
    def make() -> Path:
        return Path(tempfile.mkdtemp(prefix=prefix, dir=root))

    return make


def run_contender(contender: Contender, args: argparse.Namespace, root: Path) -> tuple[Figures, Writes]:
    workdir = Path(tempfile.mkdtemp(prefix="run-", dir=root))
    bench = Bench.start(workdir)
    try:
        contender.start(bench.cluster, workdir / "operator")
        contender.wait_ready(timeout=120)
        figures: Figures = {}
        paced_writes: Writes | None = None
        if args.paced_jobs:
            log(
                f"{contender.name}: paced, {args.paced_jobs} x {args.workers}, {args.paced_in_flight} at a time"
            )
            figures, paced_writes = paced(
                bench,
                contender,
                jobs=args.paced_jobs,
                workers=args.workers,
                in_flight=args.paced_in_flight,
                warm_up=args.paced_warm_up,
            )
        log(f"{contender.name}: throughput, {args.jobs} x {args.workers}")
        burst, writes = scenarios.throughput(
            bench, contender, jobs=args.jobs, workers=args.workers, finish_within=args.finish_within
        )
        figures |= burst
        figures["writes_per_job"] = writes.total(excluding=LEASES) / args.jobs
        log(f"{contender.name}: latency, {args.latency_rate}/s for {args.latency_seconds}s")
        figures |= scenarios.latency(
            bench, contender, rate=args.latency_rate, seconds=args.latency_seconds, workers=args.workers
        )
        log(f"{contender.name}: {json.dumps({k: round(v, 3) for k, v in figures.items()})}")
        # The paced run's writes are the ones compared: there every lifecycle finished.
        return figures, writes if paced_writes is None else paced_writes
    finally:
        contender.stop()
        bench.stop()
        if not args.keep:
            shutil.rmtree(workdir, ignore_errors=True)


def run_scale(contenders: list[Contender], args: argparse.Namespace, root: Path) -> dict[str, Figures]:
    workdir = Path(tempfile.mkdtemp(prefix="scale-", dir=root))
    bench = Bench.start(workdir)
    try:
        figures = scale.scale(
            bench,
            contenders,
            dir_factory(workdir, "operator-"),
            stage_jobs=args.scale_stages,
            arrival_rate=args.scale_arrival_rate,
            log=log,
        )
        for name, values in figures.items():
            log(f"{name}: {json.dumps({k: round(v, 3) for k, v in values.items()})}")
        return figures
    finally:
        for contender in contenders:
            contender.stop()
        bench.stop()
        if not args.keep:
            shutil.rmtree(workdir, ignore_errors=True)


def run_bare(args: argparse.Namespace, root: Path) -> Figures:
    workdir = Path(tempfile.mkdtemp(prefix="bare-", dir=root))
    bench = Bench.start(workdir)
    try:
        log(f"bare client: {args.jobs} x {args.workers}, {args.threadiness} jobs in flight")
        figures = scenarios.bare_client_limit(
            bench, jobs=args.jobs, workers=args.workers, concurrency=args.threadiness
        )
        log(f"bare client: {json.dumps({k: round(v, 3) for k, v in figures.items()})}")
        return figures
    finally:
        bench.stop()
        if not args.keep:
            shutil.rmtree(workdir, ignore_errors=True)


COMPARISONS = {"raised": RAISED_QUEUE, "default": DEFAULT_QUEUE}
COMPARISON_TITLES = {
    "raised": "both operators' work-queue limits raised until they do not bind",
    "default": "both operators' default work-queue limits (rate 10/s, burst 100), as users get them",
}


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--jobs", type=int, default=200, help="MPIJobs in the throughput burst")
    parser.add_argument("--workers", type=int, default=8, help="workers per MPIJob")
    parser.add_argument(
        "--finish-within",
        type=float,
        default=300.0,
        help="seconds after submission to stop waiting for all Running/Succeeded (then reported as not reached)",
    )
    parser.add_argument(
        "--paced-jobs",
        type=int,
        default=40,
        help="MPIJobs in the paced run, whose costs are compared (0: skip)",
    )
    parser.add_argument("--paced-in-flight", type=int, default=2, help="paced MPIJobs running at a time")
    parser.add_argument(
        "--paced-warm-up", type=int, default=2, help="uncounted MPIJobs through the paced lanes first"
    )
    parser.add_argument(
        "--rounds", type=int, default=3, help="alternating rounds of both operators, queue limits raised"
    )
    parser.add_argument(
        "--default-queue-rounds",
        type=int,
        default=1,
        help="alternating rounds of both operators with their default queue limits (0: skip)",
    )
    parser.add_argument("--latency-rate", type=float, default=4.0, help="MPIJobs per second")
    parser.add_argument("--latency-seconds", type=float, default=30.0)
    parser.add_argument(
        "--scale-stages",
        type=_three_counts,
        default=scale.STAGE_JOBS,
        help="MPIJobs (4 workers each) the scale scenario adds in its three stages, e.g. 1000,1000,3000",
    )
    parser.add_argument("--scale-arrival-rate", type=float, default=2.0, help="MPIJobs per second at scale")
    parser.add_argument("--no-scale", action="store_true", help="skip the scale scenario")
    parser.add_argument("--qps", type=int, default=Settings.qps)
    parser.add_argument("--burst", type=int, default=Settings.burst)
    parser.add_argument("--threadiness", type=int, default=Settings.threadiness)
    parser.add_argument(
        "--operator-command",
        type=lambda text: tuple(text.split()),
        help="how to run ours (default: mpi-operator next to this Python); hack/bench-operators.sh passes a "
        "venv with only the runtime dependencies, as the image has",
    )
    parser.add_argument("--only", choices=["mpioperator", "upstream"], help="run one contender")
    parser.add_argument("--no-bare", action="store_true", help="skip the bare-client limit")
    parser.add_argument("--out", type=Path, default=Path("bench-results"))
    parser.add_argument("--keep", action="store_true", help="keep cluster work directories")
    parser.add_argument("--report-from", type=Path, help="only print the summary of an earlier results.json")
    return parser.parse_args(argv)


def _three_counts(text: str) -> tuple[int, int, int]:
    counts = tuple(int(part) for part in text.split(","))
    if len(counts) != 3 or min(counts) < 1:
        raise argparse.ArgumentTypeError("three positive counts, e.g. 1000,1000,3000")
    return counts


def make_contenders(
    args: argparse.Namespace, settings: Settings, queue: QueueLimits, binary: Path
) -> list[Contender]:
    contenders: list[Contender] = []
    if args.only != "upstream":
        contenders.append(Ours(settings, queue, command=args.operator_command))
    if args.only != "mpioperator":
        contenders.append(Upstream(settings, binary, queue))
    return contenders


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    if args.report_from:
        report_from(args.report_from, args)
        return
    settings = Settings(qps=args.qps, burst=args.burst, threadiness=args.threadiness)
    binary = build_upstream() if args.only != "mpioperator" else Path()
    names = [c.name for c in make_contenders(args, settings, DEFAULT_QUEUE, binary)]
    args.out.mkdir(parents=True, exist_ok=True)
    root = Path(tempfile.mkdtemp(prefix="mpioperator-bench-"))
    comparisons: dict[str, Comparison] = {}
    bare: list[Figures] = []
    scaled: dict[str, Figures] = {}
    started = time.monotonic()
    plan = [("raised", args.rounds), ("default", args.default_queue_rounds)]
    for comparison, rounds in plan:
        if not rounds:
            continue
        contenders = make_contenders(args, settings, COMPARISONS[comparison], binary)
        result = comparisons[comparison] = {
            "rounds": rounds,
            "figures": {c.name: [] for c in contenders},
            "writes": {c.name: [] for c in contenders},
        }
        for n in range(rounds):
            order = contenders if n % 2 == 0 else contenders[::-1]
            for contender in order:
                log(f"queue limits {comparison}, round {n + 1}/{rounds}: {contender.name}")
                run_figures, run_writes = run_contender(contender, args, root)
                result["figures"][contender.name].append(run_figures)
                result["writes"][contender.name].append(run_writes)
            if comparison == "raised" and not args.no_bare:
                bare.append(run_bare(args, root))
    if not args.no_scale:
        # Upstream's default limits would take hours to work through this many jobs' events.
        log("scale: every contender on one cluster, in turn")
        scaled = run_scale(make_contenders(args, settings, RAISED_QUEUE, binary), args, root)
    if args.keep:
        log(f"cluster work directories kept in {root}")
    else:
        shutil.rmtree(root, ignore_errors=True)
    summary = summarize(args, settings, names, comparisons, bare, scaled, time.monotonic() - started)
    print(summary)
    (args.out / "summary.txt").write_text(summary + "\n")
    raw = {
        "settings": vars(settings),
        "contenders": names,
        "comparisons": {
            name: {
                "rounds": c["rounds"],
                "figures": c["figures"],
                "writes": {n: [_writes_json(w) for w in runs] for n, runs in c["writes"].items()},
            }
            for name, c in comparisons.items()
        },
        "bare": bare,
        "scale": scaled,
        "args": _jsonable(vars(args)),
    }
    (args.out / "results.json").write_text(json.dumps(raw, indent=2) + "\n")


class Comparison(TypedDict):
    rounds: int
    figures: dict[str, list[Figures]]
    writes: dict[str, list[Writes]]


def _writes_json(writes: Writes) -> dict[str, dict[str, int]]:
    return {
        "by_kind": {f"{verb} {res}": n for (verb, res), n in writes.by_kind.items()},
        "failed": {f"{verb} {res}": n for (verb, res), n in writes.failed.items()},
    }


def _writes_from_json(raw: dict[str, dict[str, int]]) -> Writes:
    def counter(part: dict[str, int]) -> Counter[tuple[str, str]]:
        return Counter({(key.split(" ", 1)[0], key.split(" ", 1)[1]): n for key, n in part.items()})

    return Writes(counter(raw.get("by_kind", {})), counter(raw.get("failed", {})))


def report_from(path: Path, args: argparse.Namespace) -> None:
    """Print the summary of an earlier run from its results.json (and redraw its charts into --out).

    Results from before the two comparisons (2026-11-23 and earlier) hold one, with default limits.
    """
    raw = json.loads(path.read_text())
    names = raw.get("contenders") or list(raw["figures"])
    for key in ("jobs", "workers"):
        setattr(args, key, raw["args"][key])
    args.paced_jobs = raw["args"].get("paced_jobs", 0)
    args.scale_stages = tuple(raw["args"].get("scale_stages", scale.STAGE_JOBS))
    stored = raw.get("comparisons") or {
        "default": {
            "rounds": raw["args"]["rounds"],
            "figures": raw["figures"],
            "writes": raw.get("writes", {}),
        }
    }
    comparisons: dict[str, Comparison] = {
        name: {
            "rounds": c["rounds"],
            "figures": c["figures"],
            "writes": {n: [_writes_from_json(w) for w in c.get("writes", {}).get(n, [])] for n in names},
        }
        for name, c in stored.items()
    }
    args.out.mkdir(parents=True, exist_ok=True)
    settings = Settings(**raw["settings"])
    print(summarize(args, settings, names, comparisons, raw["bare"], raw.get("scale", {}), 0.0))


def _jsonable(values: dict[str, object]) -> dict[str, object]:
    return {k: str(v) if isinstance(v, Path) else v for k, v in values.items()}


def summarize(
    args: argparse.Namespace,
    settings: Settings,
    names: list[str],
    comparisons: dict[str, Comparison],
    bare: list[Figures],
    scaled: dict[str, Figures],
    wall: float,
) -> str:
    heading = (
        f"qps {settings.qps}, burst {settings.burst}, threadiness {settings.threadiness}; "
        f"{platform.machine()}, {_cpus()} CPUs" + (f"; {wall / 60:.0f} min" if wall else "")
    )
    parts = [heading]
    for comparison, result in comparisons.items():
        parts += ["", f"== {COMPARISON_TITLES[comparison]}", ""]
        parts += _comparison(args, names, comparison, result, bare)
    if scaled:
        parts += ["", "== scale: " + _scale_title(args, _sharing(scaled)), ""]
        parts += _scale(args, names, scaled)
    return "\n".join(parts)


def _scale_title(args: argparse.Namespace, sharing: int = 1) -> str:
    first, second, third = args.scale_stages
    title = (
        f"long-running MPIJobs x {scale.SCALE_WORKERS} workers, {first:,}, then {second:,} more and a restart, "
        f"then {third:,} more; queue limits raised"
    )
    if sharing == 1:
        return title
    total = sharing * (first + second + third)
    return (
        f"{title}; each of {sharing} operators adds these on ONE cluster, in turn, and holds all "
        f"{total:,} MPIJobs / {total * (scale.SCALE_WORKERS + 1):,} pods in its caches at the end"
    )


def _sharing(scaled: dict[str, Figures]) -> int:
    """How many contenders took turns on the scale scenario's cluster (1 in runs from before it had one)."""
    return max((int(figures.get("scale_contenders", 1)) for figures in scaled.values()), default=1)


def _comparison(
    args: argparse.Namespace, names: list[str], comparison: str, result: Comparison, bare: list[Figures]
) -> list[str]:
    figures, writes = result["figures"], result["writes"]
    heading = (
        f"{result['rounds']} alternating round(s), median shown; {args.jobs} MPIJobs x {args.workers} workers; "
        f"{args.paced_jobs} paced"
    )
    parts = [heading, ""]
    if len(names) != 2:
        return parts + [f"{name}: {json.dumps(figures[name], indent=1)}" for name in names]
    ours, upstream = figures[names[0]], figures[names[1]]
    table = report.rows(ours, upstream, args.jobs, args.workers)
    parts.append(report.format_table(table, names=(names[0], names[1])))
    for name in names:
        for n, run in enumerate(figures[name], 1):
            if run["running_jobs"] < args.jobs or run["succeeded_jobs"] < args.jobs:
                parts.append(
                    f"< : {name}, round {n}, had {run['running_jobs']:.0f} of {args.jobs} MPIJobs Running and "
                    f"{run['succeeded_jobs']:.0f} Succeeded when the benchmark stopped waiting, "
                    f"{run['finish_within_s']:.0f}s after submitting them"
                )
            if run.get("paced_succeeded", 0) < run.get("paced_jobs", 0):
                parts.append(
                    f"> : {name}, round {n}, finished {run['paced_succeeded']:.0f} of {run['paced_jobs']:.0f} paced "
                    f"MPIJobs; a lane stopped at a job not Succeeded within {PACED_JOB_TIMEOUT_S:.0f}s"
                )
            if run.get("paced_workers_left", 0):
                parts.append(
                    f"> : {name}, round {n}, still had {run['paced_workers_left']:.0f} paced workers to delete "
                    f"{CLEAN_UP_S:.0f}s after its last paced MPIJob Succeeded; its paced costs are partial"
                )
            if run.get("latency_missing"):
                parts.append(
                    f"never: {name}, round {n}, had not created the launcher Job of {run['latency_missing']:.0f} "
                    f"of {run['latency_samples']:.0f} MPIJobs {scenarios.LATENCY_GIVE_UP_S:.0f}s after the last arrived"
                )
    paced_cpu = next(r.metric for r in table if r.metric.label == "CPU per MPIJob, paced")
    parts.append(report.format_spread("CPU per paced MPIJob", paced_cpu, ours, upstream))
    if writes[names[0]] and writes[names[1]]:
        # Runs with a paced scenario keep its writes (every lifecycle finished); older ones the burst's.
        paced_jobs = getattr(args, "paced_jobs", 0)
        writes_jobs = paced_jobs or args.jobs
        parts.append(
            f"writes per MPIJob by kind, {'paced' if paced_jobs else 'burst'} run, round 1, lease renewals excluded:"
        )
        parts.append(
            report.format_writes(
                writes[names[0]][0], writes[names[1]][0], writes_jobs, minimum_writes_per_job(args.workers)
            )
        )
    if bare:
        rate = report.metrics(args.jobs, args.workers)[0]
        parts += ["", report.format_limit(table[0].ours, table[0].upstream, report.median_of(bare, rate))]
    parts += _chart(
        table, args.out / f"bench-operators-{comparison}.png", f"{COMPARISON_TITLES[comparison]}\n{heading}"
    )
    return parts


def _scale(args: argparse.Namespace, names: list[str], scaled: dict[str, Figures]) -> list[str]:
    if len(names) != 2 or not all(n in scaled for n in names):
        return [f"{name}: {json.dumps(figures, indent=1)}" for name, figures in scaled.items()]
    sharing = _sharing(scaled)
    chosen = report.scale_metrics(args.scale_stages, scale.SCALE_WORKERS, sharing)
    table = report.rows_of(chosen, [scaled[names[0]]], [scaled[names[1]]])
    parts = [report.format_table(table, names=(names[0], names[1]))]
    for name in names:
        run = scaled[name]
        for prefix in ("startup", "scale_startup"):
            if f"{prefix}_ready_min_s" in run:
                parts.append(
                    f"{name}: {prefix.replace('_', ' ')} to ready over {scale.READY_SAMPLES} restarts: "
                    f"{run[f'{prefix}_ready_min_s']:.2f} to {run[f'{prefix}_ready_max_s']:.2f} s"
                    + (
                        f"; {run[f'{prefix}_probe_ready_s']:.2f} s in the probe's"
                        if f"{prefix}_probe_ready_s" in run
                        else ""
                    )
                )
        if sharing > 1:
            grown = [
                f"{run[f'scale_{stage}_rss_b'] / report.MIB:,.0f} MiB with "
                f"{run[f'scale_{stage}_cluster_jobs']:,.0f} MPIJobs on the cluster"
                for stage in scale.STAGE_NAMES
                if f"scale_{stage}_cluster_jobs" in run
            ]
            parts.append(f"{name}: RSS right after its own growth, quiet: {'; '.join(grown)}")
        if run.get("scale_latency_missing"):
            parts.append(
                f"never: {name}, had not created the launcher Job of {run['scale_latency_missing']:.0f} of "
                f"{run['scale_latency_samples']:.0f} MPIJobs arriving at scale "
                f"{scenarios.LATENCY_GIVE_UP_S:.0f}s after the last arrived"
            )
    parts += _chart(table, args.out / "bench-scale.png", "scale: " + _scale_title(args, sharing))
    return parts


def _chart(table: list[report.Row], path: Path, title: str) -> list[str]:
    try:
        report.draw_chart(table, path, title)
    except ImportError:
        return ["", "chart skipped: pip install -e '.[bench]' for matplotlib"]
    return ["", f"chart: {path}"]


def _cpus() -> int:
    import os

    return len(os.sched_getaffinity(0))


if __name__ == "__main__":
    main()
