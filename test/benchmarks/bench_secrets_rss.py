"""The operator's resident memory with large Secrets in the cluster (Helm keeps each release in one).

An apiserver-tier cluster (etcd + kube-apiserver, the operator's manifests installed) gets `--secrets`
Secrets of `--mib` MiB each in one namespace, created by several threads at once; then the operator is
started as the tests start it (its own process, the manifests' ServiceAccount, watching every namespace)
and its resident memory is read once it leads with synced caches: the median of a few samples, and the
peak (VmHWM) of its whole start.

    KUBEBUILDER_ASSETS=$(bash hack/build-control-plane.sh) \\
        .venv/bin/python -m test.benchmarks.bench_secrets_rss --secrets 500 --mib 1

`--pythonpath DIR` runs the operator from another checkout's sources (`git archive main mpioperator | tar
-x -C DIR`), for a before-and-after on one machine.
"""

from __future__ import annotations

import argparse
import base64
import os
import statistics
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from mpioperator.testing.cluster import LocalCluster
from mpioperator.testing.install import OPERATOR_NAMESPACE, install_manifests
from mpioperator.testing.operator import OperatorProcess

RSS_SAMPLES = 5
MIB = 1 << 20


def create_secrets(cluster: LocalCluster, namespace: str, count: int, mib: float) -> float:
    """`count` Secrets of `mib` MiB of random bytes each; the seconds it took."""
    value = base64.b64encode(os.urandom(int(mib * MIB))).decode()
    path = f"/api/v1/namespaces/{namespace}/secrets"

    def create(i: int) -> None:
        body = {"metadata": {"name": f"release-{i:04d}"}, "type": "Opaque", "data": {"release": value}}
        cluster.rest.create(path, body)

    started = time.monotonic()
    with ThreadPoolExecutor(max_workers=8) as pool:
        list(pool.map(create, range(count)))
    return time.monotonic() - started


def rss_bytes(pid: int, field: str = "VmRSS:") -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(field):
            return int(line.split()[1]) * 1024
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--secrets", type=int, default=500)
    parser.add_argument("--mib", type=float, default=1.0)
    parser.add_argument("--pythonpath", default="", help="run the operator from this checkout's sources")
    args = parser.parse_args(argv)
    command: tuple[str, ...] | None = None
    if args.pythonpath:
        os.environ["PYTHONPATH"] = str(Path(args.pythonpath).resolve())
        # -P: not this directory first on sys.path, or its own sources would be imported after all.
        command = (sys.executable, "-P", "-m", "mpioperator.app.main")
    with LocalCluster("apiserver") as cluster:
        install_manifests(cluster)
        namespace = "bench-secrets"
        cluster.rest.create("/api/v1/namespaces", {"metadata": {"name": namespace}})
        seconds = create_secrets(cluster, namespace, args.secrets, args.mib)
        print(f"created {args.secrets} Secrets of {args.mib:g} MiB in {seconds:.1f} s", flush=True)
        operator = OperatorProcess(
            cluster,
            args=(f"--lock-namespace={OPERATOR_NAMESPACE}",),
            workdir=Path(tempfile.mkdtemp(prefix="bench-secrets-")),
            command=command,
        )
        started = time.monotonic()
        operator.start()
        try:
            operator.wait_ready(timeout=600)
            ready = time.monotonic() - started
            assert operator.pid is not None
            samples = []
            for _ in range(RSS_SAMPLES):
                time.sleep(1.0)
                samples.append(rss_bytes(operator.pid))
            peak = rss_bytes(operator.pid, "VmHWM:")
        finally:
            operator.terminate()
    total = args.secrets * args.mib
    print(
        f"operator RSS after caches synced, {args.secrets} Secrets ({total:g} MiB) in the cluster: "
        f"{statistics.median(samples) / MIB:.0f} MiB (peak {peak / MIB:.0f} MiB; ready after {ready:.1f} s)"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
