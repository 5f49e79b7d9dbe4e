"""The limit: a client with no controller at all, creating what an operator creates, as fast as it can.

For each MPIJob it creates the MPIJob, then its Service, ConfigMap, SSH Secret, workers and launcher Job
at once, built by the operator's own pure builders, over the operator's own HTTP client with no rate limit;
`concurrency` jobs are in flight. It runs as its own process, so the benchmark's watch threads do not
share its interpreter, and starts on a line from stdin so its import time is not counted.

    python -m test.benchmarks.bare_client --server URL --token T --ca-file F --namespace NS \
        --jobs N --workers W --concurrency C
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import time

from mpioperator.api.defaults import set_defaults
from mpioperator.controller.builders.configmap import new_config_map
from mpioperator.controller.builders.launcher_job import new_launcher_job
from mpioperator.controller.builders.secret import new_ssh_secret
from mpioperator.controller.builders.service import new_service
from mpioperator.controller.builders.worker_pod import new_worker
from mpioperator.kube.client import KubeClient
from mpioperator.kube.resources import CONFIG_MAPS, JOBS, MPIJOBS, PODS, SECRETS, SERVICES
from test.benchmarks.scenarios import bench_job


async def create_one(client: KubeClient, ns: str, name: str, workers: int) -> None:
    body = bench_job(name, workers, "5s")
    body["metadata"]["namespace"] = ns
    job = set_defaults(await client.create(MPIJOBS, body, ns))
    children = [
        client.create(SERVICES, new_service(job), ns),
        client.create(CONFIG_MAPS, new_config_map(job, []), ns),
        client.create(SECRETS, new_ssh_secret(job), ns),
        *(client.create(PODS, new_worker(job, i), ns) for i in range(workers)),
        client.create(JOBS, new_launcher_job(job)[0], ns),
    ]
    await asyncio.gather(*children)


async def run(args: argparse.Namespace) -> float:
    client = KubeClient.explicit(
        args.server,
        token=args.token,
        ca_file=args.ca_file,
        # As many requests in flight as it had call threads before the client moved to aiohttp.
        pool_size=args.concurrency * 2,
        qps=1e9,
        burst=1_000_000_000,
    )
    names = iter(f"tp-{i:04d}" for i in range(args.jobs))

    async def lane() -> None:
        for name in names:
            await create_one(client, args.namespace, name, args.workers)

    try:
        print("ready", flush=True)
        sys.stdin.readline()
        started = time.monotonic()
        await asyncio.gather(*(lane() for _ in range(args.concurrency)))
        return time.monotonic() - started
    finally:
        await client.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    for flag in ("--server", "--token", "--ca-file", "--namespace"):
        parser.add_argument(flag, required=True)
    for flag in ("--jobs", "--workers", "--concurrency"):
        parser.add_argument(flag, type=int, required=True)
    args = parser.parse_args()
    print(json.dumps({"elapsed_s": asyncio.run(run(args))}), flush=True)


if __name__ == "__main__":
    main()
