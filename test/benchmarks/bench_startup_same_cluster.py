"""Start-up to ready at scale, both operators on one cluster, in turn: the scale scenario starts each on a
cluster of its own, whose load at restart time differs (kube-scheduler retrying thousands of pods that do
not fit, for one), and on 2 cores that load decides most of the figure. Here one cluster gets the MPIJobs
(made by our operator, all children running or pending), then the two restart one after the other, the
order alternating per round, so each pair of figures saw the same cluster.

    KUBEBUILDER_ASSETS=$(bash hack/build-control-plane.sh) \\
        .venv/bin/python -m test.benchmarks.bench_startup_same_cluster --jobs 5000 --rounds 4
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import tempfile
from pathlib import Path

from test.benchmarks.contenders import RAISED_QUEUE, Contender, Ours, Settings, Upstream, build_upstream
from test.benchmarks.scale import SCALE_WORKERS, grow, pod_count, time_to_ready
from test.benchmarks.scenarios import Bench, wait_quiet


def _restart(bench: Bench, contender: Contender, workdir: Path) -> tuple[float, float, float]:
    """Seconds from start to ready, the CPU seconds spent by then and the peak RSS in MiB by then; the
    contender is stopped after."""
    try:
        _, ready = time_to_ready(bench, contender, Path(tempfile.mkdtemp(dir=workdir)))
        stats = contender.stats()
        return ready, stats.cpu_seconds, stats.peak_rss_bytes / 2**20
    finally:
        contender.stop()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--jobs", type=int, default=5000, help="long-running MPIJobs of 4 workers")
    parser.add_argument("--rounds", type=int, default=4)
    args = parser.parse_args(argv)
    workdir = Path(tempfile.mkdtemp(prefix="mpioperator-startup-same-"))
    bench = Bench.start(workdir)
    ours = Ours(Settings(), queue=RAISED_QUEUE)
    contenders: list[Contender] = [ours, Upstream(Settings(), build_upstream(), queue=RAISED_QUEUE)]
    ready: dict[str, list[float]] = {c.name: [] for c in contenders}
    cpu: dict[str, list[float]] = {c.name: [] for c in contenders}
    rss: dict[str, list[float]] = {c.name: [] for c in contenders}
    try:
        ours.start(bench.cluster, Path(tempfile.mkdtemp(dir=workdir)))
        ours.wait_ready(timeout=600)
        wait_quiet(bench)
        grow(bench, ours, stage="all", jobs=args.jobs, workers=SCALE_WORKERS)
        ours.stop()
        print(f"{args.jobs} MPIJobs, {pod_count(bench)} pods", flush=True)
        for n in range(args.rounds):
            for contender in contenders if n % 2 == 0 else contenders[::-1]:
                seconds, cpu_s, rss_mib = _restart(bench, contender, workdir)
                ready[contender.name].append(seconds)
                cpu[contender.name].append(cpu_s)
                rss[contender.name].append(rss_mib)
                print(
                    f"round {n + 1} {contender.name:<16} ready {seconds:6.2f}s  CPU {cpu_s:5.2f}s"
                    f"  peak RSS {rss_mib:6.1f} MiB",
                    flush=True,
                )
    finally:
        for contender in contenders:
            contender.stop()
        bench.stop()
        shutil.rmtree(workdir, ignore_errors=True)
    first, second = (c.name for c in contenders)
    for name in (first, second):
        print(
            f"{name:<16} ready median {statistics.median(ready[name]):.2f}s, CPU {statistics.median(cpu[name]):.2f}s,"
            f" peak RSS {statistics.median(rss[name]):.1f} MiB"
        )
    ratios = [a / b for a, b in zip(ready[first], ready[second], strict=True)]
    cpu_ratios = [a / b for a, b in zip(cpu[first], cpu[second], strict=True)]
    print(f"{first}/{second} time to ready per round: {[round(r, 2) for r in ratios]}")
    rss_ratios = [a / b for a, b in zip(rss[first], rss[second], strict=True)]
    print(f"  median {statistics.median(ratios):.2f}; CPU to ready {statistics.median(cpu_ratios):.2f}")
    print(f"  peak RSS by ready per round: {[round(r, 2) for r in rss_ratios]}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
