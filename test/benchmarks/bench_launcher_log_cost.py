"""What following the launcher logs of 1,000 running jobs costs (mpioperator.io/progress and
stall-timeout-seconds; decisions-local L49): `pods/log` requests a second at the API server, and the
operator's CPU. A benchmark that prints figures, not a test.

    .venv/bin/python -m test.benchmarks.bench_launcher_log_cost [--jobs 1000] [--seconds 120]
        [--interval 30] [--qps 10]

A full local cluster (kwok nodes) holds one launcher pod per job, made Running by kwok. The operator's
sync handler runs in this process with the product's features and the real KubeClient as its log reader,
over indexed in-memory caches holding each running job, its launcher Job, that pod and two workers (a
running job's informers are quiet, so its syncs are the requeues the launcher log feature asks for). Each
job's first sync comes at a random moment of its first interval, as jobs start at different times; then
the loop syncs each job when its requeue falls due, as the work queue would. The API server counts the log
requests (`apiserver_request_total`, subresource `log`); the process's CPU time over the wall time is the
operator's CPU. kwok serves no pod logs unless configured to, so the reads' answers are printed as they are.
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import contextlib
import copy
import heapq
import random
import re
import time
from collections.abc import Mapping

import structlog
from prometheus_client import CollectorRegistry

from mpioperator.api.extensions import launcher_log
from mpioperator.api.objects import Obj
from mpioperator.clock import RealClock
from mpioperator.controller.feature import Feature, FeaturePorts
from mpioperator.controller.features import default_features
from mpioperator.controller.features.launcher_log import LauncherLogFeature
from mpioperator.controller.log_follower import FollowSettings
from mpioperator.controller.metrics import JobMetrics
from mpioperator.controller.ports import Listers
from mpioperator.controller.sync import JobSyncer, SyncSettings
from mpioperator.kube import errors
from mpioperator.kube.client import KubeClient
from mpioperator.kube.log_options import LogOptions
from mpioperator.kube.resources import NAMESPACES, PODS, Resource
from mpioperator.testing.cluster import LocalCluster
from mpioperator.testing.nodes import NodeShape
from test.unit.controller import sync_fixtures as fx

NAMESPACE = "logbench"
_LOG_REQUESTS = re.compile(
    r'^apiserver_request_total\{(?P<labels>[^}]*subresource="log"[^}]*)\} (?P<n>\S+)$', re.M
)


class IndexedLister:
    """One kind's cache, looked up by key, namespace and owner as the informer-backed lister's indexes do."""

    def __init__(self) -> None:
        self.by_key: dict[tuple[str, str], Obj] = {}
        self.by_ns: dict[str, list[Obj]] = collections.defaultdict(list)
        self.by_owner: dict[str, list[Obj]] = collections.defaultdict(list)

    def add(self, obj: Obj) -> None:
        meta = obj["metadata"]
        self.by_key[(meta.get("namespace", ""), meta["name"])] = obj
        self.by_ns[meta.get("namespace", "")].append(obj)
        for ref in meta.get("ownerReferences") or ():
            self.by_owner[ref["uid"]].append(obj)

    def get(self, namespace: str, name: str) -> Obj | None:
        return self.by_key.get((namespace, name))

    def select(self, namespace: str, labels: Mapping[str, str]) -> list[Obj]:
        return [
            o
            for o in self.by_ns.get(namespace, ())
            if all((o["metadata"].get("labels") or {}).get(k) == v for k, v in labels.items())
        ]

    def owned_by(self, uid: str) -> list[Obj]:
        return list(self.by_owner.get(uid, ()))


class EchoingWriter(fx.RecordingWriter):
    """Accepts every write; a status write reaches the cached job at once, as its watch event soon would."""

    def __init__(self, jobs: IndexedLister) -> None:
        super().__init__()
        self._jobs = jobs
        self.status_writes = 0

    async def update_status(self, res: Resource, body: Obj, namespace: str | None = None) -> Obj:
        self.status_writes += 1
        cached = self._jobs.get(body["metadata"].get("namespace", ""), body["metadata"]["name"])
        if cached is not None:
            cached["status"] = copy.deepcopy(body["status"])
            cached["metadata"]["resourceVersion"] = str(int(cached["metadata"]["resourceVersion"]) + 1)
        return copy.deepcopy(body)


def _log_requests(cluster: LocalCluster) -> dict[str, float]:
    text = cluster.kubectl("get", "--raw", "/metrics").stdout
    counts: dict[str, float] = collections.defaultdict(float)
    for found in _LOG_REQUESTS.finditer(text):
        code = re.search(r'code="(\d+)"', found.group("labels"))
        counts[code.group(1) if code else "?"] += float(found.group("n"))
    return dict(counts)


async def _make_pods(client: KubeClient, jobs: int, nodes: list[str]) -> list[Obj]:
    with contextlib.suppress(errors.AlreadyExists):
        await client.create(
            NAMESPACES, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NAMESPACE}}
        )
    made: list[Obj] = []
    limit = asyncio.Semaphore(32)

    async def one(i: int) -> None:
        body = {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": f"job{i}-launcher-x1"},
            "spec": {
                "nodeName": nodes[i % len(nodes)],
                "containers": [{"name": "launcher", "image": "mpioperator/mpi-pi:openmpi"}],
                "tolerations": [{"operator": "Exists"}],
            },
        }
        async with limit:
            made.append(await client.create(PODS, body, NAMESPACE))

    await asyncio.gather(*(one(i) for i in range(jobs)))
    return sorted(made, key=lambda p: int(p["metadata"]["name"][3:].split("-")[0]))


def _caches(pods: list[Obj]) -> tuple[Listers, IndexedLister]:
    kinds = {k: IndexedLister() for k in ("mpijobs", "pods", "jobs", "config_maps", "secrets", "services")}
    for i, real in enumerate(pods):
        pi = fx.running_job()
        pi["metadata"].update(namespace=f"ns{i}", uid=f"job-{i}", resourceVersion="5")
        pi["metadata"]["annotations"] = {launcher_log.PROGRESS: "json", launcher_log.STALL_TIMEOUT: "600"}
        the_launcher = fx.launcher(pi)
        the_launcher["metadata"]["uid"] = f"launcher-{i}"
        pod = fx.launcher_pod(pi, the_launcher)
        # The real pod's name, namespace and uid: the follower reads its log from the API server.
        pod["metadata"].update(
            name=real["metadata"]["name"], namespace=NAMESPACE, uid=real["metadata"]["uid"]
        )
        workers = [fx.worker(pi, w) for w in range(2)]
        for w in workers:
            w["metadata"]["uid"] = f"job-{i}-worker-{w['metadata']['name'][-1]}"
        kinds["mpijobs"].add(pi)
        kinds["jobs"].add(the_launcher)
        for obj in (*workers, pod):
            kinds["pods"].add(obj)
        for child in fx.shared_children(pi, workers):
            attr = {"Service": "services", "ConfigMap": "config_maps", "Secret": "secrets"}[child["kind"]]
            if child["kind"] == "Secret":
                child = fx._as_the_secret_cache_keeps_it(child)
            kinds[attr].add(child)
    return Listers(**kinds), kinds["mpijobs"]


async def _run(args: argparse.Namespace, cluster: LocalCluster) -> None:
    client = KubeClient.from_kubeconfig(cluster.kubeconfig, qps=1000, burst=2000)
    try:
        nodes = [f"kwok-node-{n}" for n in range(args.nodes)]
        started = time.monotonic()
        pods = await _make_pods(client, args.jobs, nodes)
        print(
            f"{len(pods)} launcher pods made on {len(nodes)} kwok nodes in {time.monotonic() - started:.1f}s"
        )
        listers, jobs = _caches(pods)
        writer = EchoingWriter(jobs)
        settings = SyncSettings(
            launcher_log=FollowSettings(args.interval, args.qps, max(1, int(2 * args.qps)))
        )
        clock = RealClock()
        built: list[Feature] = []

        def features(ports: FeaturePorts) -> list[Feature]:
            built.extend(default_features(ports))
            return built

        syncer = JobSyncer(
            listers,
            writer,
            fx.RecordingRecorder(),
            JobMetrics(CollectorRegistry()),
            utcnow=clock.utcnow,
            settings=settings,
            features=features,
            logs=client,
            clock=clock,
        )
        follower = next(f.follower for f in built if isinstance(f, LauncherLogFeature))
        try:
            options = LogOptions(limit_bytes=200, timestamps=True)
            sample = await client.pod_log(pods[0]["metadata"]["name"], NAMESPACE, options)
            print(f"a log read answers: {sample!r}")
        except errors.ApiError as exc:
            print(f"a log read answers: {exc.status} {exc.reason}: {exc.server_message[:200]}")
        before = _log_requests(cluster)
        rng = random.Random(55)
        t0 = time.monotonic()
        due = [(t0 + rng.uniform(0, args.interval), f"ns{i}/pi") for i in range(args.jobs)]
        heapq.heapify(due)
        syncs = 0
        cpu0, wall0 = time.process_time(), time.monotonic()
        end = t0 + args.seconds
        while due and due[0][0] < end:
            at, key = heapq.heappop(due)
            if (wait := at - time.monotonic()) > 0:
                await asyncio.sleep(wait)
            result = await syncer.sync(key)
            syncs += 1
            heapq.heappush(due, (time.monotonic() + (result.requeue_after or args.interval), key))
        cpu, wall = time.process_time() - cpu0, time.monotonic() - wall0
        after = _log_requests(cluster)
        counted = {code: after.get(code, 0) - before.get(code, 0) for code in after}
        assert follower is not None
        print(
            f"jobs {args.jobs}, interval {args.interval:g}s, budget {args.qps:g}/s: over {wall:.0f}s\n"
            f"syncs {syncs} ({syncs / wall:.1f}/s), status writes {writer.status_writes}\n"
            f"log reads sent {follower.reads} ({follower.reads / wall:.2f}/s), refused by the budget "
            f"{follower.refused}, failed {follower.failures}\n"
            f"the API server counted pods/log requests by code: {counted} "
            f"({sum(counted.values()) / wall:.2f}/s)\n"
            f"operator CPU: {cpu:.1f}s of {wall:.0f}s = {100 * cpu / wall:.1f}% of one core"
        )
    finally:
        await client.close()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--jobs", type=int, default=1000)
    parser.add_argument("--seconds", type=float, default=120)
    parser.add_argument("--interval", type=float, default=30)
    parser.add_argument("--qps", type=float, default=10)
    parser.add_argument("--nodes", type=int, default=10)
    args = parser.parse_args(argv)
    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(30))
    cluster = LocalCluster("full", nodes=args.nodes, node_shape=NodeShape(pods=str(args.jobs)))
    cluster.start()
    try:
        asyncio.run(_run(args, cluster))
    finally:
        cluster.stop()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
