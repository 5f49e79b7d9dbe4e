"""Chaos: two leader-elected replicas run 36 MPIJobs of mixed kinds while the leader is SIGKILLed five times,
the API server is restarted once and etcd is compacted once; every job still ends as it should.

Ten of the jobs restart as a whole (`mpioperator.io/restart-policy`) when the test makes one of their
workers fail, once in each attempt: each ends with one restart counted per failure (or Failed after its
`max-restarts`), its status writes never lose or double a count, each attempt creates its workers and
launcher Job once, and a watch on their pods sees no two attempts' pods at the same time.

The run is decided by one seed, printed first (and taken from MPIOPERATOR_CHAOS_SEED when set, to replay a
failure). The API server's audit log, with the bodies of Lease, pod, Job and MPIJob status writes (for the
holder, the attempt label and the restart count), shows who wrote what:
each replica process has its own ServiceAccount token (same account, same RBAC as the manifests), and the
log names the token of every request, so each write is checked against the Lease holder at that moment.
"""

from __future__ import annotations

import os
import random
import signal
import time
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

import pytest

from mpioperator.api.extensions import restarts
from mpioperator.testing.audit import apiserver_audit_args, committed_creates, read_records
from mpioperator.testing.chaos_driver import JobDriver
from mpioperator.testing.chaos_plan import (
    COMPACT_ETCD,
    KILL_LEADER,
    RESTART_APISERVER,
    ChaosPlan,
    Fault,
    chaos_plan,
)
from mpioperator.testing.chaos_pods import PodHistory
from mpioperator.testing.chaos_report import (
    attempts_alive_together,
    create_problems,
    creates_by_attempt,
    earlier_attempts_left,
    format_summary,
    job_mismatches,
    orphans,
    outcome,
    outcomes_by_kind,
    outside_deletions,
    restart_count_problems,
    tracebacks,
)
from mpioperator.testing.cluster import LocalCluster
from mpioperator.testing.install import OPERATOR_ACCOUNT, OPERATOR_NAMESPACE, install_manifests
from mpioperator.testing.lease_audit import (
    handover_gaps,
    holder_credentials,
    lease_writes,
    tenures,
    writes_without_lease,
)
from mpioperator.testing.replicas import ReplicaPool, Takeover
from mpioperator.testing.wait import WaitTimeout, wait_for
from test.conftest import _start

SEED_ENV = "MPIOPERATOR_CHAOS_SEED"
OPERATOR_USER = f"system:serviceaccount:{OPERATOR_NAMESPACE}:{OPERATOR_ACCOUNT}"
LEASE_NAME = "mpi-operator"
NAMESPACE = "chaos"
REPLICA_ARGS = (
    f"--lock-namespace={OPERATOR_NAMESPACE}",
    "--threadiness=4",
    "--kube-api-qps=100",
    "--kube-api-burst=200",
)
CHILDREN = (
    ("/api/v1", "services", "Service"),
    ("/api/v1", "configmaps", "ConfigMap"),
    ("/api/v1", "secrets", "Secret"),
    ("/apis/batch/v1", "jobs", "Job"),
    ("/api/v1", "pods", "Pod"),
)
# Writes logged with their bodies: the Lease's holder, the attempt of each pod and Job, the restart count;
# and pod deletes by anyone (kwok's, which can remove a new pod by an earlier one's name).
AUDITED = [
    ("coordination.k8s.io", "leases"),
    ("", "pods"),
    ("batch", "jobs"),
    ("kubeflow.org", "mpijobs/status"),
]
# After the last fault: every planned suspend, resume and delete done; then every job at its end (a job
# resumed last still runs its launcher for up to a minute, behind a takeover or two).
FINISH_TIMEOUT = 300.0
SETTLE_TIMEOUT = 240.0
T = TypeVar("T")


@pytest.fixture(scope="module")
def audited_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[LocalCluster, Path]]:
    """A full cluster of its own whose API server logs the operator's writes (Lease writes with bodies)."""
    args, log = apiserver_audit_args(
        tmp_path_factory.mktemp("chaos-audit"), OPERATOR_USER, bodies_of=AUDITED, deletes_of=[("", "pods")]
    )
    cluster = _start(LocalCluster("full", nodes=4, apiserver_args=args))
    install_manifests(cluster)
    yield cluster, log
    cluster.stop()


def chaos_seed() -> int:
    return int(os.environ.get(SEED_ENV) or random.SystemRandom().randrange(2**32))


class FaultLog:
    """What each fault did, for the summary."""

    def __init__(self) -> None:
        self.takeovers: list[Takeover] = []
        self.apiserver: list[str] = []
        self.compactions: list[int] = []


def strike(cluster: LocalCluster, pool: ReplicaPool, plan: ChaosPlan) -> FaultLog:
    done = FaultLog()
    for fault in plan.faults:
        pool.keep_up(fault.pause_before)
        if fault.kind == KILL_LEADER:
            done.takeovers.append(pool.kill_leader())
        elif fault.kind == RESTART_APISERVER:
            pool.pause()
            started = time.monotonic()
            try:
                hang_then_restart_apiserver(cluster, fault)
            finally:
                pool.resume()
            back = time.monotonic() - started
            pool.wait_leader(timeout=180)
            how = "SIGKILL" if fault.crash else "SIGTERM"
            done.apiserver.append(
                f"hung {fault.outage}s, then {how}: serving again after {back:.1f}s, "
                f"a leader after {time.monotonic() - started:.1f}s"
            )
        elif fault.kind == COMPACT_ETCD:
            done.compactions.append(cluster.compact_etcd())
    return done


def keeping_up(pool: ReplicaPool, probe: Callable[[], T]) -> Callable[[], T]:
    """`probe`, reviving exited replicas before each call (from this, the main, thread)."""

    def probe_kept_up() -> T:
        pool.revive_exited()
        return probe()

    return probe_kept_up


def hang_then_restart_apiserver(cluster: LocalCluster, fault: Fault) -> None:
    """The API server stops answering (SIGSTOP: requests hang, as on a stalled machine) for the fault's
    outage, longer than the renew deadline, so the leader loses the Lease while it still runs; then it is
    restarted on the same storage."""
    pid = cluster.component_pid("kube-apiserver")
    assert pid is not None
    os.kill(pid, signal.SIGSTOP)
    time.sleep(fault.outage)  # the fault itself: how long the server hangs
    if not fault.crash:
        os.kill(pid, signal.SIGCONT)  # a graceful stop needs a running process
    cluster.restart_apiserver(crash=fault.crash)


def read_namespace(cluster: LocalCluster) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """(MPIJobs by name, every object of a child kind) in the chaos namespace."""
    jobs = {
        j["metadata"]["name"]: j
        for j in cluster.rest.get(f"/apis/kubeflow.org/v2beta1/namespaces/{NAMESPACE}/mpijobs")["items"]
    }
    objects = []
    for root, plural, kind in CHILDREN:
        for item in cluster.rest.get(f"{root}/namespaces/{NAMESPACE}/{plural}")["items"]:
            item["kind"] = kind  # list items come without it
            objects.append(item)
    return jobs, objects


def pods_of(objects: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [o for o in objects if o["kind"] == "Pod"]


def unsettled(cluster: LocalCluster, plan: ChaosPlan, injected: dict[str, int]) -> list[str]:
    """What still differs from the expected end; empty once every job has settled."""
    jobs, objects = read_namespace(cluster)
    pods = pods_of(objects)
    return (
        job_mismatches(plan, jobs, pods, injected)
        + orphans(objects, jobs.values())
        + earlier_attempts_left(jobs, pods)
    )


@pytest.mark.timeout(1200)  # a few minutes normally; the waits above give up first and say why
def test_two_replicas_survive_leader_kills_an_apiserver_restart_and_a_compaction(
    audited_cluster: tuple[LocalCluster, Path], tmp_path: Path
) -> None:
    cluster, audit_log = audited_cluster
    seed = chaos_seed()
    print(f"\nchaos seed {seed} (replay with {SEED_ENV}={seed})", flush=True)
    plan = chaos_plan(seed)
    cluster.rest.create("/api/v1/namespaces", {"metadata": {"name": NAMESPACE}})
    wait_for(
        lambda: cluster.rest.get(f"/api/v1/namespaces/{NAMESPACE}/serviceaccounts/default"),
        timeout=30,
        what="the chaos namespace's default ServiceAccount",
    )
    started = time.monotonic()
    pool = ReplicaPool(cluster, tmp_path, args=REPLICA_ARGS)
    pool.start()
    pool.wait_leader()
    history = PodHistory(cluster, NAMESPACE)
    history.start()
    driver = JobDriver(cluster, NAMESPACE, plan)
    driver.start()
    try:
        faults = strike(cluster, pool, plan)
        wait_for(
            keeping_up(pool, driver.done),
            timeout=FINISH_TIMEOUT,
            interval=1.0,
            what="every planned suspend, resume, delete",
        )
        try:
            wait_for(
                keeping_up(pool, lambda: unsettled(cluster, plan, driver.injected())),
                timeout=SETTLE_TIMEOUT,
                interval=2.0,
                what="every job at its expected end, no orphans",
                done=lambda left: not left,
            )
        except WaitTimeout as exc:
            print(f"not settled: {exc}")  # the checks below say what differs
    finally:
        driver.stop()
        history.stop()
        stop_codes = pool.stop()
    wall = time.monotonic() - started

    jobs, objects = read_namespace(cluster)
    injected = driver.injected()
    mismatches = job_mismatches(plan, jobs, pods_of(objects), injected)
    left_over = orphans(objects, jobs.values()) + earlier_attempts_left(jobs, pods_of(objects))
    records = read_records(audit_log, OPERATOR_USER)
    creates = committed_creates(records, "pods")
    removed = outside_deletions(read_records(audit_log, None), NAMESPACE, OPERATOR_USER)
    duplicates, missing = create_problems(plan, creates_by_attempt(records, NAMESPACE), injected, removed)
    count_problems = restart_count_problems(records, NAMESPACE)
    together = attempts_alive_together(history.events)
    violations = writes_without_lease(records, OPERATOR_NAMESPACE, LEASE_NAME)
    renewals = lease_writes(records, OPERATOR_NAMESPACE, LEASE_NAME)
    held = tenures(renewals)
    holders = holder_credentials(renewals)
    names = pool.credentials()
    found_tracebacks = tracebacks(pool.logs())
    other_exits = [e for e in pool.exits if not e.killed and not (e.code == 1 and e.lost_leadership)]
    figures: dict[str, Any] = {
        "seed": seed,
        "wall seconds": round(wall, 1),
        "jobs": f"{len(plan.jobs)} x {plan.workers} workers",
        "jobs by outcome": dict(Counter(outcome(jobs.get(j.name)) for j in plan.jobs)),
        "jobs not as expected": len(mismatches),
        "pod creates": sum(creates.values()),
        "workers and launcher Jobs created more than planned (duplicates)": len(duplicates),
        "workers and launcher Jobs created less than planned": len(missing),
        "pods removed under the operator by others (kwok)": sum(removed.values()),
        "worker failures planned": sum(j.failures for j in plan.jobs),
        "worker failures injected": sum(injected.values()),
        "restarts counted": sum(restarts_of(jobs.get(j.name)) for j in plan.jobs),
        "restart counts lost or doubled in status writes": len(count_problems),
        "attempt pod events watched": len(history.events),
        "pods of two attempts at once": len(together),
        "pod watch relists": history.relists,
        "orphans and earlier attempts' pods": len(left_over),
        "takeovers after SIGKILL (s)": [t.seconds for t in faults.takeovers],
        "lease handover gaps (s)": handover_gaps(held),
        "lease holders in turn": [names.get(holders[t.holder], t.holder) for t in held],
        "apiserver restart": faults.apiserver,
        "etcd compacted at revision": faults.compactions,
        "replica exits": _exit_summary(pool),
        "replica stop codes": stop_codes,
        "tracebacks": sum(len(ends) for ends in found_tracebacks.values()),
        "operator writes checked against the lease": sum(1 for r in records if r.resource != "leases"),
        "writes without the lease": len(violations),
        "driver errors": len(driver.errors),
        "driver ticks without the API server": driver.unreachable_ticks,
    }
    print(format_summary(figures, outcomes_by_kind(plan, jobs)), flush=True)
    problems = {
        "not as expected": mismatches,
        "created more than planned": duplicates,
        "created less than planned": missing,
        "restart counts lost or doubled": count_problems,
        "pods of two attempts at once": together,
        "left over": left_over,
    }
    for what, found in problems.items():
        if found:  # every list at once: the asserts below stop at the first
            print(f"{what}:\n  " + "\n  ".join(found), flush=True)

    replay = f"(replay with {SEED_ENV}={seed})"
    assert driver.errors == [] and history.errors == [], replay
    assert mismatches == [], replay
    assert duplicates == [] and missing == [], replay
    assert count_problems == [] and together == [], replay
    assert left_over == [], replay
    assert found_tracebacks == {}, replay
    assert other_exits == [], replay
    assert all(code == 0 for code in stop_codes.values()), replay
    assert [v.describe() for v in violations] == [], replay


def restarts_of(job: dict[str, Any] | None) -> int:
    return restarts.restarts((job or {}).get("status") or {})


def _exit_summary(pool: ReplicaPool) -> str:
    killed = sum(1 for e in pool.exits if e.killed)
    lost = sum(1 for e in pool.exits if not e.killed and e.lost_leadership)
    other = [f"{e.name} code {e.code}" for e in pool.exits if not e.killed and not e.lost_leadership]
    return f"{killed} SIGKILLed by the test, {lost} after losing the lease, other: {other or 'none'}"
