"""Start-up to ready at scale, both operators on one cluster, in turn: on clusters of their own, whose load
at restart time differs (kube-scheduler retrying thousands of pods that do not fit, for one), that load
decides most of the figure on 2 cores. Here one cluster gets the MPIJobs (made by our operator, all
children running or pending), then the two restart one after the other, the order alternating per round
(scale.restart_rounds, which the scale scenario's restarts use too), so each pair of figures saw the same
cluster. Unlike the scale scenario, nothing else is measured, and only one operator's jobs are there.

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
from test.benchmarks.scale import SCALE_WORKERS, RestartSample, grow, pod_count, restart_rounds
from test.benchmarks.scenarios import Bench, wait_quiet


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

        def record(sample: RestartSample) -> None:
            rss_mib = sample.peak_rss_b / 2**20
            ready[sample.contender].append(sample.ready_s)
            cpu[sample.contender].append(sample.cpu_s)
            rss[sample.contender].append(rss_mib)
            print(
                f"round {sample.round} {sample.contender:<16} ready {sample.ready_s:6.2f}s  CPU {sample.cpu_s:5.2f}s"
                f"  peak RSS {rss_mib:6.1f} MiB",
                flush=True,
            )

        restart_rounds(
            bench, contenders, lambda: Path(tempfile.mkdtemp(dir=workdir)), args.rounds, on_sample=record
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
