"""`hack/local-cluster.sh`: start a local cluster, print how to reach it, run until stopped."""

from __future__ import annotations

import argparse
import shutil
import signal
import sys
import threading
from pathlib import Path
from types import FrameType

from mpioperator.testing.binaries import BinariesUnavailable
from mpioperator.testing.cluster import ClusterStartError, LocalCluster, Tier
from mpioperator.testing.node.realnode import NodeUnavailable
from mpioperator.testing.nodes import NodeShape


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="hack/local-cluster.sh",
        description="Run a real local control plane, kwok fake nodes and a real node until stopped.",
    )
    parser.add_argument(
        "--tier",
        choices=["full", "apiserver", "real"],
        default="full",
        help="real: the full tier plus a real node that runs containers (root only)",
    )
    parser.add_argument(
        "--nodes", type=int, default=4, help="kwok nodes to create (full and real tiers; tainted on real)"
    )
    parser.add_argument("--node-cpu", default="32")
    parser.add_argument("--node-memory", default="256Gi")
    parser.add_argument("--node-gpus", type=int, default=0, help="nvidia.com/gpu per node")
    parser.add_argument(
        "--write-kubeconfig", type=Path, help="also copy the admin kubeconfig here (e.g. for another shell)"
    )
    args = parser.parse_args(argv)
    if args.nodes < 0:
        parser.error("--nodes must be >= 0")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    extended = {"nvidia.com/gpu": str(args.node_gpus)} if args.node_gpus else {}
    tier: Tier = args.tier
    cluster = LocalCluster(
        tier,
        nodes=args.nodes,
        node_shape=NodeShape(cpu=args.node_cpu, memory=args.node_memory, extended=extended),
    )
    stop = threading.Event()

    def on_signal(signum: int, frame: FrameType | None) -> None:
        stop.set()

    signal.signal(signal.SIGINT, on_signal)
    signal.signal(signal.SIGTERM, on_signal)
    try:
        cluster.start()
    except (ClusterStartError, BinariesUnavailable, NodeUnavailable) as err:
        print(f"error: {err}", file=sys.stderr)
        return 1
    try:
        kubeconfig = cluster.kubeconfig
        if args.write_kubeconfig:
            args.write_kubeconfig.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(kubeconfig, args.write_kubeconfig)
            kubeconfig = args.write_kubeconfig.resolve()
        nodes = f", {args.nodes} kwok nodes" if tier != "apiserver" else ""
        if cluster.node is not None:
            nodes += f", real node {cluster.node.name} (images from {cluster.node.registry_address})"
        print(f"Local cluster is up ({tier} tier{nodes}) in {cluster.startup_seconds:.1f}s.")
        print("In another shell:")
        print(f"  export KUBECONFIG={kubeconfig}")
        print(f"  export PATH={cluster.binaries.directory}:$PATH")
        print("  kubectl get nodes")
        print(f"Component logs: {cluster.layout.logs if cluster.layout else '?'}")
        print("Press Ctrl+C to stop.", flush=True)
        while not stop.wait(1.0):
            for name, tail in cluster.dead_components().items():
                print(f"error: {name} exited:\n{tail}", file=sys.stderr)
                return 1
    finally:
        cluster.stop()
    print("Local cluster stopped.")
    return 0


if __name__ == "__main__":
    sys.exit(main())
