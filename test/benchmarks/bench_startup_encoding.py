"""Start-up to ready with 10,000 pods: the operator listing and watching pods as JSON against protobuf.

One full-tier cluster (the benchmark's: manifests installed, kwok nodes) gets 10,000 recorded running
worker pods; then our operator is started, timed until it leads with synced caches, and stopped, once
with `--kube-api-content-type=application/json` and once with protobuf per round, the order alternating.
The machine is shared, so what counts is the ratio within each round, not the absolute times.

    KUBEBUILDER_ASSETS=$(bash hack/build-control-plane.sh) \\
        .venv/bin/python -m test.benchmarks.bench_startup_encoding --rounds 4
"""

from __future__ import annotations

import argparse
import asyncio
import shutil
import statistics
import tempfile
import time
from pathlib import Path

from mpioperator.kube.client import KubeClient
from mpioperator.kube.protoapi import PROTOBUF
from test.benchmarks.bench_pod_decoders import create_running_pods
from test.benchmarks.contenders import Ours, Settings
from test.benchmarks.scenarios import Bench

ENCODINGS = {"json": "application/json", "protobuf": PROTOBUF}


async def _fill(bench: Bench, pods: int) -> None:
    ns = bench.namespace("bench-startup-pods")
    client = KubeClient.from_kubeconfig(bench.cluster.kubeconfig, qps=5000.0, burst=5000, workers=8)
    try:
        await create_running_pods(client, pods, ns, owned=False)
    finally:
        await client.close()


def _start_once(bench: Bench, encoding: str, workdir: Path) -> tuple[float, float]:
    """Seconds to ready and CPU seconds spent by then, from a free lock."""
    bench.free_lock()
    ours = Ours(Settings(), extra_args=(f"--kube-api-content-type={ENCODINGS[encoding]}",))
    started = time.monotonic()
    ours.start(bench.cluster, Path(tempfile.mkdtemp(prefix=f"{encoding}-", dir=workdir)))
    try:
        ours.wait_ready(timeout=600)
        ready = time.monotonic() - started
        return ready, ours.stats().cpu_seconds
    finally:
        ours.stop()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--pods", type=int, default=10_000)
    parser.add_argument("--rounds", type=int, default=4)
    args = parser.parse_args(argv)
    workdir = Path(tempfile.mkdtemp(prefix="mpioperator-startup-"))
    bench = Bench.start(workdir)
    ready: dict[str, list[float]] = {name: [] for name in ENCODINGS}
    cpu: dict[str, list[float]] = {name: [] for name in ENCODINGS}
    try:
        started = time.monotonic()
        asyncio.run(_fill(bench, args.pods))
        print(f"created {args.pods} pods in {time.monotonic() - started:.0f}s", flush=True)
        for n in range(args.rounds):
            order = list(ENCODINGS) if n % 2 == 0 else list(ENCODINGS)[::-1]
            for encoding in order:
                seconds, cpu_s = _start_once(bench, encoding, workdir)
                ready[encoding].append(seconds)
                cpu[encoding].append(cpu_s)
                print(f"round {n + 1} {encoding:<8} ready {seconds:6.2f}s  CPU {cpu_s:5.2f}s", flush=True)
    finally:
        bench.stop()
        shutil.rmtree(workdir, ignore_errors=True)
    ratios = [p / j for p, j in zip(ready["protobuf"], ready["json"], strict=True)]
    cpu_ratios = [p / j for p, j in zip(cpu["protobuf"], cpu["json"], strict=True)]
    for name in ENCODINGS:
        print(
            f"{name:<8} ready median {statistics.median(ready[name]):.2f}s, "
            f"CPU median {statistics.median(cpu[name]):.2f}s"
        )
    print(f"protobuf/JSON time to ready per round: {[round(r, 2) for r in ratios]}")
    print(f"  median {statistics.median(ratios):.2f}; CPU to ready {statistics.median(cpu_ratios):.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
