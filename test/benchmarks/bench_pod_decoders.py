"""Decoding a 10,000-pod list into the pod cache's slim pods: JSON (msgspec projection, then slim_pod) and
protobuf (upb, straight into slim pods); reading a protobuf page's continue token ahead of its items; and
decoding a protobuf Status (the error answer a real API server sent, test/unit/kube/captured/).

The pods are the recorded running workers of `recorded_pods`, created on a real API server (etcd and
kube-apiserver of the local cluster) and given their status through the status subresource, then listed
once as JSON and once as protobuf. The server's own time to serve each is timed too, interleaved.

    KUBEBUILDER_ASSETS=$(bash hack/build-control-plane.sh) \\
        .venv/bin/python -m test.benchmarks.bench_pod_decoders --pods 10000 --save /tmp/pods
    .venv/bin/python -m test.benchmarks.bench_pod_decoders --load /tmp/pods    # decoders only, no cluster
    .venv/bin/python -m test.benchmarks.bench_pod_decoders --load /tmp/pods --peak by-item   # or whole-list

`--peak` decodes the protobuf list once in this fresh process and prints how far its peak RSS grew: pod by
pod, as the operator does, or the whole list in one upb parse (the alternative decisions-local L26 weighs).
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import resource
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from mpioperator.api.objects import Obj
from mpioperator.controller.pod_cache import POD_CACHE_PROJECTION, slim_pod_message
from mpioperator.kube.client import KubeClient
from mpioperator.kube.protoapi import PROTOBUF, decode_status, list_continue, unwrap
from mpioperator.kube.protoschema import LIST_META, POD, Field, Message
from mpioperator.kube.protoupb import message_class
from mpioperator.kube.resources import PODS
from mpioperator.testing.cluster import LocalCluster
from test.benchmarks.recorded_pods import worker_pod

NAMESPACE = "bench-decoders"
CAPTURED_STATUS = Path(__file__).parents[1] / "unit" / "kube" / "captured" / "bad-continue.pb"
STATUS_ROUNDS = 10_000
IN_FLIGHT = 32


def _as_created(index: int, owned: bool) -> tuple[Obj, Obj]:
    pod = worker_pod(index)
    meta = pod["metadata"]
    if not owned:
        del meta["ownerReferences"]
    for server_field in ("uid", "resourceVersion", "creationTimestamp", "managedFields", "namespace"):
        meta.pop(server_field, None)
    meta["name"] = f"w-{index:05d}"
    # Bound to no node and left to no scheduler: on a cluster with kwok nodes the status stays as written.
    del pod["spec"]["nodeName"]
    pod["spec"]["schedulerName"] = "bench-nobody"
    return pod, pod.pop("status")


async def create_running_pods(
    client: KubeClient, count: int, namespace: str = NAMESPACE, *, owned: bool = True
) -> None:
    """`count` recorded running workers, each given its status as kubelet would. Owned pods name an MPIJob
    that does not exist: only where no garbage collector runs (the apiserver tier) do they stay."""

    async def one(index: int) -> None:
        pod, status = _as_created(index, owned)
        await client.create(PODS, pod, namespace)
        # A patch, not a PUT: on a full cluster a controller may touch the pod between the two.
        await client.patch(PODS, pod["metadata"]["name"], {"status": status}, namespace, subresource="status")

    for first in range(0, count, IN_FLIGHT):
        await asyncio.gather(*(one(i) for i in range(first, min(first + IN_FLIGHT, count))))


async def _serve_times(client: KubeClient, rounds: int) -> dict[str, list[float]]:
    """Wall time of a whole-list GET as JSON and as protobuf, alternating."""
    times: dict[str, list[float]] = {"json": [], "protobuf": []}
    transport = client._t  # the raw bodies, undecoded
    for _ in range(rounds):
        for name, accept in (("json", None), ("protobuf", PROTOBUF)):
            started = time.perf_counter()
            answer = await transport.request("GET", PODS.path(NAMESPACE), accept=accept, timeout=120.0)
            times[name].append(time.perf_counter() - started)
            assert answer.status == 200, answer.status
    return times


async def _capture(count: int, serve_rounds: int) -> tuple[bytes, bytes, dict[str, list[float]]]:
    with LocalCluster("apiserver") as cluster:
        cluster.rest.create("/api/v1/namespaces", {"metadata": {"name": NAMESPACE}})
        client = KubeClient.from_kubeconfig(cluster.kubeconfig, qps=5000.0, burst=5000)
        try:
            started = time.monotonic()
            await create_running_pods(client, count)
            print(f"created {count} pods in {time.monotonic() - started:.1f}s", file=sys.stderr)
            path = PODS.path(NAMESPACE)
            as_json = (await client._t.request("GET", path, timeout=120.0)).body
            as_proto = (await client._t.request("GET", path, accept=PROTOBUF, timeout=120.0)).body
            serve = await _serve_times(client, serve_rounds)
        finally:
            await client.close()
    return as_json, as_proto, serve


def _best(decode: Callable[[], Any], repeats: int) -> tuple[float, Any]:
    """The fastest of `repeats` runs (the machine is shared: the minimum is the least disturbed), with
    the collector off as the operator runs its decoders (gc_tuning raises its thresholds)."""
    times: list[float] = []
    out: Any = None
    for _ in range(repeats):
        gc.collect()
        gc.disable()
        try:
            started = time.process_time()
            out = decode()
            times.append(time.process_time() - started)
        finally:
            gc.enable()
    return min(times), out


def _whole_list(body: bytes) -> list[Obj]:
    """The slim pods of a list parsed by upb in one piece, its pods and their unknown fields all at once."""
    pod_list = message_class(
        Message(
            "PodList",
            (Field(1, "metadata", "message", LIST_META), Field(2, "items", "message", POD, repeated=True)),
        )
    )
    _, start, stop = unwrap(body, 0, len(body))
    return [slim_pod_message(pod) for pod in pod_list.FromString(memoryview(body)[start:stop]).items]


def _peak(mode: str, body: bytes) -> None:
    protobuf = POD_CACHE_PROJECTION.protobuf
    assert protobuf is not None
    decoders: dict[str, Callable[[], list[Obj]]] = {
        "by-item": lambda: protobuf.list(body)["items"],
        "whole-list": lambda: _whole_list(body),
    }
    decode = decoders[mode]
    gc.collect()
    gc.disable()
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    started = time.process_time()
    pods = decode()
    cpu = time.process_time() - started
    grown = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) / 1024
    print(f"{mode}: {len(pods)} pods, peak RSS grew {grown:.0f} MiB, {cpu * 1000:.0f} ms CPU")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--pods", type=int, default=10_000)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--serve-rounds", type=int, default=5)
    parser.add_argument("--save", type=Path, help="keep the two list bodies here")
    parser.add_argument("--load", type=Path, help="decode bodies saved earlier (no cluster)")
    parser.add_argument("--peak", choices=("by-item", "whole-list"), help="peak RSS of one decode (--load)")
    args = parser.parse_args(argv)
    serve: dict[str, list[float]] = {}
    if args.peak:
        if not args.load:
            parser.error("--peak reads bodies saved earlier: give --load")
        _peak(args.peak, (args.load / "pods.pb").read_bytes())
        return 0
    if args.load:
        as_json = (args.load / "pods.json").read_bytes()
        as_proto = (args.load / "pods.pb").read_bytes()
    else:
        as_json, as_proto, serve = asyncio.run(_capture(args.pods, args.serve_rounds))
        if args.save:
            args.save.mkdir(parents=True, exist_ok=True)
            (args.save / "pods.json").write_bytes(as_json)
            (args.save / "pods.pb").write_bytes(as_proto)
    protobuf = POD_CACHE_PROJECTION.protobuf
    assert protobuf is not None
    decoders: dict[str, Callable[[], Obj]] = {
        "JSON, msgspec projection, then slim_pod": lambda: POD_CACHE_PROJECTION.list(as_json),
        "protobuf, upb straight into slim pods": lambda: protobuf.list(as_proto),
    }
    items = len(POD_CACHE_PROJECTION.list(as_json)["items"])
    print(f"{items} pods: JSON {len(as_json) / 1e6:.1f} MB, protobuf {len(as_proto) / 1e6:.1f} MB")
    for name, times in serve.items():
        print(
            f"served as {name:<9} median {statistics.median(times):.3f}s  all {[round(t, 3) for t in times]}"
        )
    reference = None
    for name, decode in decoders.items():
        seconds, out = _best(decode, args.repeats)
        if reference is None:
            reference = out
        # The two lists were taken one after the other: their resourceVersions may differ, not their pods.
        same = "same pods" if out["items"] == reference["items"] else "DIFFERENT pods"
        print(f"{name:<58} {seconds * 1000:8.1f} ms CPU  {seconds / items * 1e6:6.2f} µs/pod  {same}")
    seconds, _ = _best(lambda: list_continue(as_proto), args.repeats)
    print(f"{'protobuf, continue token ahead of the items':<58} {seconds * 1e6:8.1f} µs CPU")
    status = CAPTURED_STATUS.read_bytes()
    seconds, _ = _best(lambda: [decode_status(status) for _ in range(STATUS_ROUNDS)], args.repeats)
    print(f"{'protobuf Status (a real 400)':<58} {seconds / STATUS_ROUNDS * 1e6:8.2f} µs CPU each")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
