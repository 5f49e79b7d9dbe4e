"""A chaos run decided by one seed: which MPIJobs of which kinds arrive when, and which faults strike.

Everything random in a run comes from `chaos_plan(seed)`, so printing the seed is enough to replay it (the
operator's own timing still varies from run to run; the plan does not).
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Any

from mpioperator.api.extensions import restarts
from mpioperator.testing.mpijobs import mpijob

SUCCEED = "succeed"
FAIL = "fail"
CLEAN_ALL = "clean-all"
CLEAN_NONE = "clean-none"
SUSPEND_RESUME = "suspend-resume"
DELETE = "delete"
# Whole-job restarts (mpioperator.io/restart-policy), with worker failures the driver injects one per attempt:
RESTART = "restart"  # OnWorkerFailure: restarted once or twice, then Succeeded
RESTART_EXHAUST = "restart-exhaust"  # OnWorkerFailure, max-restarts 1: a second (evicted) worker fails it
# OnFailure, max-restarts 2: a worker fails its first attempt, then its launcher fails every attempt
RESTART_ON_FAILURE = "restart-on-failure"
RESTART_KINDS = (RESTART, RESTART_EXHAUST, RESTART_ON_FAILURE)
# 36 jobs by default: how many of each kind.
MIX: dict[str, int] = {
    SUCCEED: 6,
    FAIL: 4,
    CLEAN_ALL: 4,
    CLEAN_NONE: 4,
    SUSPEND_RESUME: 4,
    DELETE: 4,
    RESTART: 5,
    RESTART_EXHAUST: 3,
    RESTART_ON_FAILURE: 2,
}
# max-restarts of each restart kind.
MAX_RESTARTS = {RESTART: 3, RESTART_EXHAUST: 1, RESTART_ON_FAILURE: 2}
EVICTED_REASON = "MPIJobEvicted"

KILL_LEADER = "kill-leader"
RESTART_APISERVER = "restart-apiserver"
COMPACT_ETCD = "compact-etcd"

SUCCEEDED = "Succeeded"
FAILED = "Failed"
DELETED = "Deleted"


@dataclass(frozen=True, slots=True)
class Expectation:
    outcome: str  # SUCCEEDED, FAILED or DELETED
    workers_left: int  # worker pods still there at the end
    worker_creates: int  # successful creates of each worker pod in each attempt (at most, if deleted)
    restarts: int = 0  # status.restarts at the end: each attempt after the first has its own creates
    failed_reason: str = ""  # the Failed condition's reason, where the plan decides it


@dataclass(frozen=True, slots=True)
class JobPlan:
    name: str
    kind: str
    submit_at: float  # seconds after the run starts
    runs_for: int  # seconds each launcher pod runs
    act_after: (
        float  # suspend, delete or fail a worker this long after Running; resume as long after suspended
    )
    failures: int = 0  # restart kinds: worker failures to inject, one in each attempt from the first

    def expectation(self, workers: int, injected: int = 0) -> Expectation:
        """The end this job should reach; for a restart kind, after `injected` worker failures landed (the
        launcher may finish an attempt before its failure is injected, so the plan gives only the most)."""
        if self.kind in RESTART_KINDS:
            return self._restart_expectation(injected)
        if self.kind == DELETE:
            return Expectation(DELETED, 0, 1)
        if self.kind == FAIL:
            return Expectation(FAILED, 0, 1)
        if self.kind == CLEAN_NONE:
            return Expectation(SUCCEEDED, workers, 1)
        # Suspending deletes the workers; resuming creates them again, once.
        return Expectation(SUCCEEDED, 0, 2 if self.kind == SUSPEND_RESUME else 1)

    def _restart_expectation(self, injected: int) -> Expectation:
        limit = MAX_RESTARTS[self.kind]
        if self.kind == RESTART_ON_FAILURE:
            # Every attempt's launcher fails, whatever the workers do: the last failure is the launcher's.
            return Expectation(FAILED, 0, 1, restarts=limit)
        if injected > limit:
            # cleanPodPolicy All takes the evicted worker too.
            return Expectation(FAILED, 0, 1, restarts=limit, failed_reason=EVICTED_REASON)
        return Expectation(SUCCEEDED, 0, 1, restarts=injected)

    @property
    def failure_reason(self) -> str:
        """The reason an injected worker failure carries: an eviction is what ends an exhausted job."""
        return "Evicted" if self.kind == RESTART_EXHAUST else "Error"

    def body(self, workers: int) -> dict[str, Any]:
        run_policy: dict[str, Any] = {}
        if self.kind in (CLEAN_ALL, RESTART_EXHAUST):
            run_policy["cleanPodPolicy"] = "All"
        elif self.kind == CLEAN_NONE:
            run_policy["cleanPodPolicy"] = "None"
        fails = self.kind in (FAIL, RESTART_ON_FAILURE)
        if fails:
            run_policy["backoffLimit"] = 0  # one failed launcher pod fails the launcher Job
        body = mpijob(
            self.name,
            workers=workers,
            launcher_runs_for=f"{self.runs_for}s",
            launcher_exit_code=1 if fails else None,
            run_policy=run_policy,
        )
        if self.kind in RESTART_KINDS:
            policy = restarts.ON_FAILURE if self.kind == RESTART_ON_FAILURE else restarts.ON_WORKER_FAILURE
            body["metadata"]["annotations"] = {
                restarts.RESTART_POLICY: policy,
                restarts.MAX_RESTARTS: str(MAX_RESTARTS[self.kind]),
                restarts.RESTART_BACKOFF: "1",  # the chaos is in the leaders, not in the waits
            }
        return body


@dataclass(frozen=True, slots=True)
class Fault:
    kind: str
    pause_before: float  # seconds after the previous fault has been recovered from
    # RESTART_APISERVER: the API server hangs (SIGSTOP) this long first, longer than the operator's renew
    # deadline, so the leader loses the Lease while it still runs; then it is stopped and started again.
    outage: float = 0.0
    crash: bool = False  # RESTART_APISERVER: SIGKILL instead of a graceful stop


@dataclass(frozen=True, slots=True)
class ChaosPlan:
    seed: int
    workers: int
    jobs: tuple[JobPlan, ...]
    faults: tuple[Fault, ...]


def _runs_for(kind: str, rng: random.Random) -> int:
    if kind == DELETE:
        return 3600  # still running whenever it is deleted
    if kind == SUSPEND_RESUME:
        # Still running when suspended, even if the Running condition shows up late behind a takeover.
        return rng.randint(45, 60)
    if kind in (RESTART, RESTART_EXHAUST):
        return 3600  # the test completes its last attempt's launcher (chaos_failures)
    if kind == RESTART_ON_FAILURE:
        return rng.randint(12, 18)  # its first attempt's worker failure usually lands before this
    return rng.randint(5, 40)


def _failures(kind: str, rng: random.Random) -> int:
    if kind == RESTART:
        return rng.randint(1, 2)
    if kind == RESTART_EXHAUST:
        return MAX_RESTARTS[kind] + 1
    return 1 if kind == RESTART_ON_FAILURE else 0


def chaos_plan(
    seed: int,
    *,
    workers: int = 4,
    mix: dict[str, int] | None = None,
    kills: int = 5,
    submit_window: float = 60.0,
) -> ChaosPlan:
    rng = random.Random(seed)
    kinds = [kind for kind, count in (mix or MIX).items() for _ in range(count)]
    rng.shuffle(kinds)
    jobs = tuple(
        JobPlan(
            name=f"chaos-{i:02d}-{kind}",
            kind=kind,
            submit_at=round(rng.uniform(0.0, submit_window), 1),
            runs_for=_runs_for(kind, rng),
            act_after=round(rng.uniform(0.0, 4.0), 1),
            failures=_failures(kind, rng),
        )
        for i, kind in enumerate(kinds)
    )
    fault_kinds = [KILL_LEADER] * kills + [RESTART_APISERVER, COMPACT_ETCD]
    rng.shuffle(fault_kinds)
    return ChaosPlan(seed, workers, jobs, tuple(_fault(kind, rng) for kind in fault_kinds))


def _fault(kind: str, rng: random.Random) -> Fault:
    pause = round(rng.uniform(3.0, 10.0), 1)
    if kind != RESTART_APISERVER:
        return Fault(kind, pause)
    return Fault(kind, pause, outage=round(rng.uniform(6.0, 12.0), 1), crash=rng.random() < 0.5)
