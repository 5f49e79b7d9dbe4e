"""Start-up to ready with 10,000 pods: the operator listing and watching pods as JSON against protobuf.

One full-tier cluster (the benchmark's: manifests installed, kwok nodes) gets 10,000 recorded running
worker pods; then our operator is started, timed until it leads with synced caches, and stopped, once
with `--kube-api-content-type=application/json` and once with protobuf per round, the order alternating.
The machine is shared, so what counts is the ratio within each round, not the absolute times.

    KUBEBUILDER_ASSETS=$(bash hack/build-control-plane.sh) \\
        .venv/bin/python -m test.benchmarks.bench_startup_encoding --rounds 4

`--before DIR` compares protobuf with protobuf instead: this checkout against the operator run from
another checkout's sources (`git archive main mpioperator | tar -x -C DIR`), the same way.
"""

from __future__ import annotations

import argparse
import asyncio
import os
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
    client = KubeClient.from_kubeconfig(bench.cluster.kubeconfig, qps=5000.0, burst=5000)
    try:
        await create_running_pods(client, pods, ns, owned=False)
    finally:
        await client.close()


def _start_once(
    bench: Bench, encoding: str, workdir: Path, pythonpath: str | None = None
) -> tuple[float, float]:
    """Seconds to ready and CPU seconds spent by then, from a free lock."""
    bench.free_lock()
    ours = Ours(Settings(), extra_args=(f"--kube-api-content-type={ENCODINGS[encoding]}",))
    started = time.monotonic()
    saved = os.environ.get("PYTHONPATH")
    if pythonpath is not None:
        os.environ["PYTHONPATH"] = pythonpath  # the operator process inherits it
    try:
        ours.start(bench.cluster, Path(tempfile.mkdtemp(prefix=f"{encoding}-", dir=workdir)))
    finally:
        if saved is None:
            os.environ.pop("PYTHONPATH", None)
        else:
            os.environ["PYTHONPATH"] = saved
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
    parser.add_argument("--before", type=Path, help="compare protobuf with the operator from this checkout")
    args = parser.parse_args(argv)
    # Each run: its name, its encoding, and where its sources come from (None: this checkout).
    runs: dict[str, tuple[str, str | None]] = {name: (name, None) for name in ENCODINGS}
    if args.before:
        runs = {"before": ("protobuf", str(args.before.resolve())), "after": ("protobuf", None)}
    workdir = Path(tempfile.mkdtemp(prefix="mpioperator-startup-"))
    bench = Bench.start(workdir)
    ready: dict[str, list[float]] = {name: [] for name in runs}
    cpu: dict[str, list[float]] = {name: [] for name in runs}
    try:
        started = time.monotonic()
        asyncio.run(_fill(bench, args.pods))
        print(f"created {args.pods} pods in {time.monotonic() - started:.0f}s", flush=True)
        for n in range(args.rounds):
            order = list(runs) if n % 2 == 0 else list(runs)[::-1]
            for name in order:
                encoding, pythonpath = runs[name]
                seconds, cpu_s = _start_once(bench, encoding, workdir, pythonpath)
                ready[name].append(seconds)
                cpu[name].append(cpu_s)
                print(f"round {n + 1} {name:<8} ready {seconds:6.2f}s  CPU {cpu_s:5.2f}s", flush=True)
    finally:
        bench.stop()
        shutil.rmtree(workdir, ignore_errors=True)
    first, second = list(runs)
    ratios = [b / a for b, a in zip(ready[second], ready[first], strict=True)]
    cpu_ratios = [b / a for b, a in zip(cpu[second], cpu[first], strict=True)]
    for name in runs:
        print(
            f"{name:<8} ready median {statistics.median(ready[name]):.2f}s, "
            f"CPU median {statistics.median(cpu[name]):.2f}s"
        )
    print(f"{second}/{first} time to ready per round: {[round(r, 2) for r in ratios]}")
    print(f"  median {statistics.median(ratios):.2f}; CPU to ready {statistics.median(cpu_ratios):.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
