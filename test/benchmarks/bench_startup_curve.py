"""How start-up grows with one job's size: one MPIJob of N workers, from submit to all its children, to
all workers Running and to the launcher Job, for each operator in turn on one cluster.

Both operators run against the same kwok cluster, one at a time and in alternating order per round, so
each pair of figures saw the same API server, scheduler and kwok. Each measurement gets a namespace of its
own, which is emptied (and its pods gone) before the next starts, so no run pays for another's leftovers.

    KUBEBUILDER_ASSETS=$(bash hack/build-control-plane.sh) \\
        .venv/bin/python -m test.benchmarks.bench_startup_curve --sizes 10,100,1000,5000,10000 --rounds 3

Prints a table (median and spread per size) and writes the figures as JSON and the chart as PNG.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import Any

from mpioperator.api.defaults import set_defaults
from mpioperator.controller.builders.configmap import DATA_LIMIT
from mpioperator.controller.features.pod_ip_hostfile import dns_hostfile_bytes
from mpioperator.testing.audit import LEASES
from mpioperator.testing.rest import RestError
from mpioperator.testing.wait import ProbeAborted, WaitTimeout, wait_for
from test.benchmarks.contenders import RAISED_QUEUE, Contender, Ours, Settings, Upstream, build_upstream
from test.benchmarks.scenarios import Bench, bench_job, wait_alive, wait_quiet
from test.benchmarks.timeline import Timeline

# Ours refuses jobs above --max-worker-replicas (2,512 by default, what fits a hostfile at the longest
# names); the curve goes past it on purpose, with short names, as upstream is given no bound at all.
OURS_MAX_WORKERS = 20_000
# The Service, the ConfigMap and the SSH Secret, beside the workers and the launcher Job.
SHARED_CHILDREN = 3
JOB_NAME = "curve"
# The longest name whose workers' hostnames stay DNS labels at 5-digit indexes (63 - len("-worker-99999")).
LONG_JOB_NAME = "c" * 50
NAMESPACE_LENGTH = 63
IP_HOSTFILE = {"mpioperator.io/hostfile-addresses": "ip"}
STALLED_S = 90.0


@dataclass(frozen=True)
class Point:
    """One operator's start-up of one job: seconds from the create call, the operator's CPU seconds and
    writes by the time its writes settled, and the hostfile ConfigMap's size."""

    contender: str
    workers: int
    children_s: float
    running_s: float
    launcher_s: float
    cpu_s: float
    writes: int
    configmap_bytes: int
    note: str = ""  # why a run never got all its workers Running
    # "ip" when the job asked for a hostfile of pod IPs and the operator reads the annotation (ours).
    hostfile: str = "dns"
    # Hosts the ConfigMap's hostfile and discover_hosts.sh list once every worker runs: a ConfigMap whose
    # update the API server refused (past its size limit) lists fewer than the job's workers.
    hostfile_hosts: int = -1
    discovered_hosts: int = -1

    @property
    def series(self) -> str:
        """The operator, and how its hostfile names hosts when not by DNS name."""
        return self.contender + (" (pod-IP hostfile)" if self.hostfile == "ip" else "")


@dataclass(frozen=True)
class Shape:
    """The job each run submits: its name, and its annotations (the hostfile of pod IPs, say)."""

    name: str = JOB_NAME
    annotations: tuple[tuple[str, str], ...] = ()

    def body(self, workers: int) -> dict[str, Any]:
        made = bench_job(self.name, workers, "24h")
        if self.annotations:
            made["metadata"]["annotations"] = dict(self.annotations)
        return made

    def hostfile_of(self, contender: Contender) -> str:
        """How `contender` names the hosts of this job: upstream knows no pod-IP annotation."""
        return "ip" if isinstance(contender, Ours) and dict(self.annotations) == IP_HOSTFILE else "dns"


def fits_by_name(name: str, namespace: str, workers: int) -> bool:
    """Whether the job's hostfile and discover_hosts.sh of DNS names fit a ConfigMap (ours refuses one
    that cannot: decisions-local L48)."""
    job = set_defaults(bench_job(name, workers, "24h"))
    job["metadata"]["namespace"] = namespace
    return dns_hostfile_bytes(job, "") <= DATA_LIMIT


def configmap_figures(bench: Bench, ns: str, name: str) -> tuple[int, int, int]:
    """The ConfigMap's data bytes (keys and values), its hostfile's host lines and the hosts its
    discover_hosts.sh echoes."""
    body = bench.cluster.rest.get(f"/api/v1/namespaces/{ns}/configmaps/{name}-config")
    data: dict[str, str] = body.get("data") or {}
    size = sum(len(k.encode()) + len(v.encode()) for k, v in data.items())
    hosts = [line for line in data.get("hostfile", "").splitlines() if line.strip()]
    discovered = [line for line in data.get("discover_hosts.sh", "").splitlines() if line.startswith("echo ")]
    return size, len(hosts), len(discovered)


def measure(bench: Bench, contender: Contender, ns: str, workers: int, shape: Shape) -> Point:
    name = shape.name
    timeline = Timeline(bench.cluster.rest, ns).start(
        expected_children=workers + 1 + SHARED_CHILDREN, expected_running=workers
    )
    cpu_before, writes_before = contender.stats().cpu_seconds, bench.writes()
    started = time.monotonic()
    bench.submit(ns, [shape.body(workers)])
    progress = Progress(timeline, name)
    try:
        wait_alive(
            f"{workers} workers Running under {contender.name}",
            lambda: progress.check() and name in timeline.pods_running_at,
            contender,
            # Scheduling and kwok's status updates run at a few hundred pods a second here.
            timeout=120 + workers * 0.1,
        )
    except (WaitTimeout, ProbeAborted) as exc:
        timeline.stop()
        return failed(bench, contender, ns, workers, str(exc).splitlines()[0], shape)
    writes = wait_quiet(bench, timeout=120).minus(writes_before)
    timeline.stop()
    size, hosts, discovered = configmap_figures(bench, ns, name)
    return Point(
        contender=contender.name,
        workers=workers,
        children_s=timeline.child_complete_at[name] - started,
        running_s=timeline.pods_running_at[name] - started,
        launcher_s=timeline.launcher_at[name] - started,
        cpu_s=contender.stats().cpu_seconds - cpu_before,
        writes=writes.total(excluding=LEASES),
        configmap_bytes=size,
        hostfile=shape.hostfile_of(contender),
        hostfile_hosts=hosts,
        discovered_hosts=discovered,
    )


class Progress:
    """Gives up once nothing new has been seen for STALLED_S: a job the operator cannot start (a
    ConfigMap the API server refuses, say) would otherwise hold the run for the whole budget."""

    def __init__(self, timeline: Timeline, name: str) -> None:
        self.timeline = timeline
        self.name = name
        self.last = timeline.progress(name)
        self.changed_at = time.monotonic()

    def check(self) -> bool:
        now, seen = time.monotonic(), self.timeline.progress(self.name)
        if seen != self.last:
            self.last, self.changed_at = seen, now
        elif now - self.changed_at > STALLED_S:
            children, running = seen
            raise ProbeAborted(f"stalled at {children} children and {running} Running workers")
        return True


def failed(bench: Bench, contender: Contender, ns: str, workers: int, why: str, shape: Shape) -> Point:
    """A run that never got all its workers Running, with what the cluster said about it."""
    events = bench.cluster.rest.get(f"/api/v1/namespaces/{ns}/events")["items"]
    warnings = sorted(
        {f"{e.get('reason')}: {e.get('message', '')[:160]}" for e in events if e.get("type") == "Warning"}
    )
    nan = float("nan")
    note = "; ".join([why, *warnings[:2]])
    return Point(
        contender.name, workers, nan, nan, nan, nan, 0, 0, note=note, hostfile=shape.hostfile_of(contender)
    )


def empty(bench: Bench, ns: str, timeout: float) -> None:
    """Delete the namespace with everything in it and wait until it is gone: the pods' deletion is
    kwok's and the namespace controller's work, which must not overlap the next measurement."""
    rest = bench.cluster.rest
    # The namespace controller deletes what is in it; a collection delete of thousands of pods from here
    # would hold one request open for longer than the client waits.
    try:
        rest.delete(f"/api/v1/namespaces/{ns}")
    except RestError as exc:
        # Never made: the operator did not start. Its own error is the one to see, not this.
        if exc.status == 404:
            return
        raise

    def gone() -> bool:
        try:
            rest.get(f"/api/v1/namespaces/{ns}")
        except RestError as exc:
            if exc.status == 404:
                return True
            raise
        return False

    wait_for(gone, timeout=timeout, interval=1.0, what=f"namespace {ns} to be deleted")


def warm_up(bench: Bench, contender: Contender, ns: str) -> None:
    """One small job first, so the figure is a running operator's, not its first sync's after start-up
    (connections opened, code paths loaded): users submit to an operator that has been up for a while."""
    bench.submit(ns, [bench_job("warm-up", 1, "24h")])

    def launched() -> bool:
        jobs = bench.cluster.rest.get(f"/apis/batch/v1/namespaces/{ns}/jobs")
        return any(j["metadata"]["name"] == "warm-up-launcher" for j in jobs["items"])

    wait_alive("the warm-up job's launcher", launched, contender, timeout=120)
    wait_quiet(bench, timeout=60)


def run_once(bench: Bench, contender: Contender, workers: int, ns: str, workdir: Path, shape: Shape) -> Point:
    bench.free_lock()
    contender.start(bench.cluster, Path(tempfile.mkdtemp(dir=workdir)))
    try:
        contender.wait_ready(timeout=600)
        bench.namespace(ns)
        warm_up(bench, contender, ns)
        return measure(bench, contender, ns, workers, shape)
    finally:
        contender.stop()
        empty(bench, ns, timeout=300 + workers * 0.2)


def spread(values: list[float]) -> str:
    return f"{statistics.median(values):8.2f} ({min(values):.2f}-{max(values):.2f})"


def series_names(points: list[Point]) -> list[str]:
    """Each series once, in the order first seen."""
    return list(dict.fromkeys(p.series for p in points))


def table(points: list[Point]) -> str:
    """A row per job size and series: medians with the spread of the rounds, or why it did not start.
    `hosts` is the fewest hosts the ConfigMap's hostfile and discover_hosts.sh listed in any round."""
    lines = [
        f"{'workers':>8} {'operator':<36} {'runs':>4} {'children s':>24} {'all Running s':>24}"
        f" {'launcher Job s':>24} {'CPU s':>24} {'writes':>8} {'ConfigMap':>10} {'hosts':>12}"
    ]
    for size in sorted({p.workers for p in points}):
        for name in series_names(points):
            mine = [p for p in points if p.workers == size and p.series == name]
            if not mine:
                continue
            if any(p.note for p in mine):
                notes = sorted({p.note for p in mine if p.note})
                failed = sum(1 for p in mine if p.note)
                lines.append(f"{size:>8} {name:<36} {len(mine):>4} did not start in {failed}: {notes[0]}")
                continue
            hosts = f"{min(p.hostfile_hosts for p in mine)}/{min(p.discovered_hosts for p in mine)}"
            if any(p.hostfile_hosts < 0 for p in mine):
                hosts = "-"  # a run from before they were counted
            lines.append(
                f"{size:>8} {name:<36} {len(mine):>4} {spread([p.children_s for p in mine]):>24}"
                f" {spread([p.running_s for p in mine]):>24} {spread([p.launcher_s for p in mine]):>24}"
                f" {spread([p.cpu_s for p in mine]):>24} {statistics.median([p.writes for p in mine]):>8.0f}"
                f" {max(p.configmap_bytes for p in mine):>10} {hosts:>12}"
            )
    return "\n".join(lines)


def read_points(paths: list[Path]) -> list[Point]:
    """The points of earlier runs' points.json files; a run before a field existed gets its default."""
    known = {f.name for f in fields(Point)}
    return [
        Point(**{k: v for k, v in raw.items() if k in known})
        for path in paths
        for raw in json.loads(path.read_text())
    ]


def draw_curve(points: list[Point], path: Path) -> None:
    """Three panels against workers on log-log axes: children created, all Running, launcher Job."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    panels = (
        ("all children created", "children_s"),
        ("all workers Running", "running_s"),
        ("launcher Job", "launcher_s"),
    )
    fig, axes = plt.subplots(1, len(panels), figsize=(13, 4), squeeze=False)
    names = series_names(points)
    colours = ("#2a7ab9", "#9a9a9a", "#7fb3dd", "#5a5a5a")
    for ax, (title, key) in zip(axes.flat, panels, strict=True):
        for name, colour in zip(names, colours, strict=False):
            mine = [p for p in points if p.series == name]
            sizes = sorted(
                {p.workers for p in mine if not any(q.note for q in mine if q.workers == p.workers)}
            )
            medians = [statistics.median([getattr(p, key) for p in mine if p.workers == s]) for s in sizes]
            ax.plot(sizes, medians, marker="o", color=colour, label=name)
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("workers in the one MPIJob")
        ax.set_ylabel("seconds from submit (median)")
        ax.set_title(title, fontsize=10)
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--sizes", default="10,100,1000,5000,10000", help="worker counts, comma-separated")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument(
        "--long-names",
        action="store_true",
        help=f"a {len(LONG_JOB_NAME)}-letter job name in {NAMESPACE_LENGTH}-letter namespaces (the longest)",
    )
    parser.add_argument(
        "--ip-hostfile", action="store_true", help="the job asks for a hostfile of pod IPs (ours reads it)"
    )
    parser.add_argument(
        "--ip-hostfile-past-limit",
        action="store_true",
        help="only a job whose hostfile of DNS names cannot fit a ConfigMap asks for one of pod IPs",
    )
    parser.add_argument("--out", type=Path, default=Path("bench-startup-curve"), help="JSON and PNG go here")
    parser.add_argument(
        "--report-from",
        type=Path,
        nargs="+",
        help="run nothing: the table and chart of earlier runs' points.json files, together",
    )
    args = parser.parse_args(argv)
    if args.report_from:
        return report(read_points(args.report_from), args.out)
    sizes = [int(s) for s in args.sizes.split(",")]
    workdir = Path(tempfile.mkdtemp(prefix="mpioperator-startup-curve-"))
    bench = Bench.start(workdir)
    contenders: list[Contender] = [
        Ours(Settings(), queue=RAISED_QUEUE, extra_args=(f"--max-worker-replicas={OURS_MAX_WORKERS}",)),
        Upstream(Settings(), build_upstream(), queue=RAISED_QUEUE),
    ]
    name = LONG_JOB_NAME if args.long_names else JOB_NAME
    points: list[Point] = []
    try:
        for size in sizes:
            for n in range(args.rounds):
                for contender in contenders if n % 2 == 0 else contenders[::-1]:
                    # Names of one length: the hostfile's size depends on the namespace's.
                    ns = f"curve-{size}-{n}-{'ours' if isinstance(contender, Ours) else 'upst'}"
                    if args.long_names:
                        ns = ns.ljust(NAMESPACE_LENGTH, "x")
                    by_ip = args.ip_hostfile or (
                        args.ip_hostfile_past_limit and not fits_by_name(name, ns, size)
                    )
                    shape = Shape(name=name, annotations=tuple(IP_HOSTFILE.items()) if by_ip else ())
                    point = run_once(bench, contender, size, ns, workdir, shape)
                    points.append(point)
                    print(json.dumps(asdict(point)), flush=True)
    finally:
        bench.stop()
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "points.json").write_text(json.dumps([asdict(p) for p in points], indent=1) + "\n")
    return report(points, args.out)


def report(points: list[Point], out: Path) -> int:
    print(table(points))
    out.mkdir(parents=True, exist_ok=True)
    draw_curve(points, out / "startup-curve.png")
    print(f"figures and chart in {out}/", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
