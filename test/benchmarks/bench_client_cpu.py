"""Client CPU per request and per watch event against a real local API server over TLS, for one or more
source trees in one sitting (trees alternate round by round, so they share the machine's state). A
benchmark that prints figures, not a test.

    KUBEBUILDER_ASSETS=$(bash hack/build-control-plane.sh) \
        .venv/bin/python -m test.benchmarks.bench_client_cpu --tree before=/work/main --tree after=.

Each measurement runs in a fresh process with the tree first on its path, through the client's public
calls only, so any two trees with the same KubeClient API compare: CPU is the whole process's
(`time.process_time`, every thread included), divided by the calls or events it served.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

from mpioperator.kube.list_options import ListOptions
from mpioperator.testing.cluster import LocalCluster

NAMESPACE = "bench-client"
POD_NAMESPACE = "bench-startup-pods"
EVENT_PAD = 2000  # bytes of data per ConfigMap: a small object, as most watch events are


async def measure(
    kubeconfig: str, gets: int, in_flight: int, events: int, pods: int
) -> dict[str, float | str]:
    """Run inside the measured tree: CPU per GET (one at a time and `in_flight` at once), per watch
    event (a watch replaying `events` creates), and the wall and CPU time of listing `pods` pods as the
    pod informer lists them (protobuf, the cache's projection, pages read ahead)."""
    import mpioperator
    from mpioperator.controller.pod_cache import POD_CACHE_PROJECTION
    from mpioperator.kube.client import KubeClient
    from mpioperator.kube.resources import CONFIG_MAPS, NAMESPACES, PODS

    client = KubeClient.from_kubeconfig(kubeconfig, qps=1e6, burst=1_000_000)
    try:
        for _ in range(50):  # connections made, code paths warm
            await client.get(NAMESPACES, "default")
        started = time.process_time()
        for _ in range(gets):
            await client.get(NAMESPACES, "default")
        serial = (time.process_time() - started) / gets

        started = time.process_time()
        for _ in range(gets // in_flight):
            await asyncio.gather(*(client.get(NAMESPACES, "default") for _ in range(in_flight)))
        parallel = (time.process_time() - started) / (gets // in_flight * in_flight)

        listed = await client.list(CONFIG_MAPS, NAMESPACE, ListOptions(limit=1))
        rv = listed["metadata"]["resourceVersion"]
        seen = 0
        started = time.process_time()
        async for event in client.watch(
            CONFIG_MAPS, NAMESPACE, ListOptions(resource_version="1", timeout_seconds=120)
        ):
            if event["type"] == "ADDED":
                seen += 1
                if seen == events:
                    break
        per_event = (time.process_time() - started) / events
        del rv

        list_wall = list_cpu = 0.0
        if pods:
            wall, cpu = time.monotonic(), time.process_time()
            listed_pods = 0
            pages = client.list_pages(
                PODS, POD_NAMESPACE, ListOptions(limit=500, projection=POD_CACHE_PROJECTION)
            )
            async for page in pages:
                listed_pods += len(page["items"])
            list_wall, list_cpu = time.monotonic() - wall, time.process_time() - cpu
            assert listed_pods == pods, listed_pods
    finally:
        await client.close()
    return {
        "tree": str(Path(mpioperator.__file__).parent.parent),
        "get": serial,
        "get_parallel": parallel,
        "event": per_event,
        "list_wall": list_wall,
        "list_cpu": list_cpu,
    }


async def seed_pods(cluster: LocalCluster, pods: int) -> None:
    from mpioperator.kube.client import KubeClient
    from test.benchmarks.bench_pod_decoders import create_running_pods

    cluster.rest.create("/api/v1/namespaces", {"metadata": {"name": POD_NAMESPACE}})
    client = KubeClient.from_kubeconfig(cluster.kubeconfig, qps=5000.0, burst=5000)
    try:
        await create_running_pods(client, pods, POD_NAMESPACE)
    finally:
        await client.close()


def seed(cluster: LocalCluster, events: int) -> None:
    cluster.rest.create("/api/v1/namespaces", {"metadata": {"name": NAMESPACE}})
    for i in range(events):
        cluster.rest.create(
            f"/api/v1/namespaces/{NAMESPACE}/configmaps",
            {"metadata": {"name": f"cm-{i}"}, "data": {"pad": "x" * EVENT_PAD}},
        )


def run_in(tree: str, kubeconfig: Path, args: argparse.Namespace) -> dict[str, float | str]:
    # Loaded by path, not as test.benchmarks: the measured tree's own `test` package may not have this file.
    code = (
        "import asyncio, json, runpy; "
        f"measure = runpy.run_path({__file__!r})['measure']; "
        f"print(json.dumps(asyncio.run(measure({str(kubeconfig)!r}, {args.gets}, {args.in_flight}, "
        f"{args.events}, {args.pods}))))"
    )
    env = {**os.environ, "PYTHONPATH": os.path.abspath(tree)}
    out = subprocess.run(
        [sys.executable, "-c", code], env=env, cwd=tree, check=True, capture_output=True, text=True
    )
    result: dict[str, float | str] = json.loads(out.stdout.strip().splitlines()[-1])
    return result


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--tree", action="append", required=True, help="name=path of a source tree")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--gets", type=int, default=500)
    parser.add_argument("--in-flight", type=int, default=8)
    parser.add_argument("--events", type=int, default=2000)
    parser.add_argument("--pods", type=int, default=0, help="recorded running pods to list (0: none)")
    args = parser.parse_args()
    trees = dict(t.split("=", 1) for t in args.tree)
    results: dict[str, list[dict[str, float | str]]] = {name: [] for name in trees}
    with LocalCluster("apiserver") as cluster:
        seed(cluster, args.events)
        if args.pods:
            asyncio.run(seed_pods(cluster, args.pods))
        for _ in range(args.rounds):
            for name, tree in trees.items():
                result = run_in(tree, cluster.kubeconfig, args)
                results[name].append(result)
                print(name, json.dumps(result), file=sys.stderr)
    for name, runs in results.items():
        line = [name, f"({runs[0]['tree']})"]
        for key, label, unit, scale in (
            ("get", "GET", "us", 1e6),
            ("get_parallel", f"GET x{args.in_flight}", "us", 1e6),
            ("event", "event", "us", 1e6),
            ("list_wall", f"list of {args.pods} pods", "s", 1.0),
            ("list_cpu", "its CPU", "s", 1.0),
        ):
            values = sorted(float(r[key]) * scale for r in runs)
            digits = 0 if unit == "us" else 2
            low, high, median = values[0], values[-1], statistics.median(values)
            line.append(f"{label} {low:.{digits}f}-{high:.{digits}f} {unit} (median {median:.{digits}f})")
        print("  ".join(line))


if __name__ == "__main__":
    main()
