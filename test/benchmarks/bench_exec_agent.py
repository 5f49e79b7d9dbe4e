"""Start-up of the exec launch agent against ssh on the real node, for 2 and 16 workers.

One real-node cluster (the manifests installed, the exec-agent overlay's rights added, our operator run
with --exec-agent) runs pi jobs one after another, the agents alternating within each round, after one
job of each that is not counted (the first pods on a fresh node pull the images). Each job's
launcher prints the moment it starts mpirun; pi's ranks print "rank R of N on HOST" once MPI is up.
Two figures per job, both on the node's clock (the cluster runs on this machine):

* created -> first rank: from the MPIJob's create request to the first rank line (workers scheduled,
  started and Ready, the launcher made and started, then mpirun);
* mpirun -> first rank: from mpirun's start to the first rank line (the agent starting MPI's daemons).

The machine is shared and slow: the figures are what one run measured, not a bound.

    KUBEBUILDER_ASSETS=$(bash hack/build-control-plane.sh) MPIOPERATOR_NODE_BIN=$(bash hack/setup-node.sh) \\
    REGISTRY_BIN=$(bash hack/build-registry.sh) .venv/bin/python -m test.benchmarks.bench_exec_agent --runs 3
"""

from __future__ import annotations

import argparse
import datetime as dt
import re
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

import yaml

from mpioperator.testing.cluster import LocalCluster
from mpioperator.testing.install import OPERATOR_NAMESPACE, install_manifests
from mpioperator.testing.jobs import Job
from mpioperator.testing.node import slot
from mpioperator.testing.node.settings import NodeNetwork
from mpioperator.testing.operator import OperatorProcess
from mpioperator.testing.wait import wait_for
from test.real.test_real_exec_agent import exec_rbac_documents, sleeping_workers, with_exec_agent
from test.real.test_real_mpijobs import pi_job

START_LINE = re.compile(r"^(\S+) mpirun-start$", re.MULTILINE)
RANK_LINE = re.compile(r"^(\S+) rank \d+ of \d+ on \S+$", re.MULTILINE)


def job_body(name: str, agent: str, workers: int) -> dict[str, Any]:
    body = pi_job(name, workers=workers, ranks=workers)
    launcher = body["spec"]["mpiReplicaSpecs"]["Launcher"]["template"]["spec"]["containers"][0]
    launcher["args"] = ["sh", "-c", f"echo mpirun-start; exec mpirun -n {workers} /home/mpiuser/pi"]
    # A failed launcher's pod stays, so its Failed condition can quote its last words.
    body["metadata"]["annotations"] = {"mpioperator.io/keep-failed-launcher": "true"}
    if agent == "exec":
        body = with_exec_agent(sleeping_workers(body))
    return body


def _when(stamp: str) -> float:
    # kubectl --timestamps gives RFC 3339 with nanoseconds; Python reads microseconds.
    whole, _, fraction = stamp.rstrip("Z").partition(".")
    parsed = dt.datetime.fromisoformat(whole).replace(tzinfo=dt.UTC)
    return parsed.timestamp() + float(f"0.{fraction or '0'}"[:8])


class JobFailed(RuntimeError):
    """The job failed; the message is its Failed condition's (the launcher's last words included)."""


def run_one(cluster: LocalCluster, ns: str, name: str, agent: str, workers: int) -> tuple[float, float]:
    job = Job(cluster, ns, name)
    submitted = time.time()
    job.submit(job_body(name, agent, workers))
    try:
        finished = wait_for(
            lambda: job.condition("Succeeded") or job.condition("Failed"),
            timeout=900,
            what=f"{name} to finish",
        )
        if finished is None or finished["type"] != "Succeeded":
            raise JobFailed(str((finished or {}).get("message")))
        log = cluster.kubectl("-n", ns, "logs", "--timestamps", f"job/{name}-launcher").stdout
        start, rank = START_LINE.search(log), RANK_LINE.search(log)
        if start is None or rank is None:
            raise JobFailed(f"no start or rank line in\n{log}")
        first_rank = _when(rank.group(1))
        return first_rank - submitted, first_rank - _when(start.group(1))
    finally:
        cluster.kubectl("-n", ns, "delete", "mpijob", name, "--wait=true")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--workers", type=int, nargs="+", default=[2, 16])
    args = parser.parse_args(argv)
    network = NodeNetwork.from_env()
    results: dict[tuple[str, int], list[tuple[float, float]]] = {}
    failures: dict[tuple[str, int], int] = {}
    with slot.holding(network.tag), tempfile.TemporaryDirectory(prefix="mpioperator-exec-bench-") as work:
        cluster = LocalCluster("real", nodes=0, node_network=network)
        cluster.start()
        operator = None
        try:
            install_manifests(cluster)
            rbac = exec_rbac_documents(cluster)
            cluster.kubectl("apply", "--server-side", "-f", "-", input=yaml.safe_dump_all(rbac))
            operator = OperatorProcess(
                cluster,
                args=(f"--lock-namespace={OPERATOR_NAMESPACE}", "--exec-agent"),
                workdir=Path(work) / "operator",
            )
            operator.start()
            operator.wait_ready(timeout=120)
            cluster.rest.create("/api/v1/namespaces", {"metadata": {"name": "bench"}})
            # Not counted: the first pods on a fresh node pull the images.
            for agent in ("ssh", "exec"):
                run_one(cluster, "bench", f"warm-{agent}", agent, 2)
            for run in range(args.runs):
                for workers in args.workers:
                    agents = ["ssh", "exec"] if run % 2 == 0 else ["exec", "ssh"]
                    for agent in agents:
                        name = f"{agent}-{workers}-{run}"
                        try:
                            created, mpirun = run_one(cluster, "bench", name, agent, workers)
                        except JobFailed as failed:
                            failures[(agent, workers)] = failures.get((agent, workers), 0) + 1
                            print(
                                f"run {run + 1} {agent:<4} {workers:>2} workers: FAILED: {failed}", flush=True
                            )
                            continue
                        results.setdefault((agent, workers), []).append((created, mpirun))
                        print(
                            f"run {run + 1} {agent:<4} {workers:>2} workers: created -> first rank "
                            f"{created:6.1f} s, mpirun -> first rank {mpirun:6.2f} s",
                            flush=True,
                        )
        finally:
            if operator is not None:
                operator.terminate()
            cluster.stop()
    print("\nmedians (s)          created -> first rank   mpirun -> first rank")
    for (agent, workers), figures in sorted(results.items(), key=lambda item: (item[0][1], item[0][0])):
        created = statistics.median(f[0] for f in figures)
        mpirun = statistics.median(f[1] for f in figures)
        failed_runs = failures.get((agent, workers), 0)
        print(
            f"{agent:<4} {workers:>2} workers (n={len(figures)}, {failed_runs} failed)   {created:8.1f}   {mpirun:20.2f}"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
