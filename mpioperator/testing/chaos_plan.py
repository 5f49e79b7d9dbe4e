"""A chaos run decided by one seed: which MPIJobs of which kinds arrive when, and which faults strike.

Everything random in a run comes from `chaos_plan(seed)`, so printing the seed is enough to replay it (the
operator's own timing still varies from run to run; the plan does not).
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Any

from mpioperator.testing.mpijobs import mpijob

SUCCEED = "succeed"
FAIL = "fail"
CLEAN_ALL = "clean-all"
CLEAN_NONE = "clean-none"
SUSPEND_RESUME = "suspend-resume"
DELETE = "delete"
# 30 jobs by default: how many of each kind.
MIX: dict[str, int] = {SUCCEED: 7, FAIL: 5, CLEAN_ALL: 5, CLEAN_NONE: 5, SUSPEND_RESUME: 4, DELETE: 4}

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
    worker_creates: int  # successful creates of each worker pod (at most this many for a deleted job)


@dataclass(frozen=True, slots=True)
class JobPlan:
    name: str
    kind: str
    submit_at: float  # seconds after the run starts
    runs_for: int  # seconds each launcher pod runs
    act_after: float  # suspend or delete this long after Running is seen; resume as long after suspended

    def expectation(self, workers: int) -> Expectation:
        if self.kind == DELETE:
            return Expectation(DELETED, 0, 1)
        if self.kind == FAIL:
            return Expectation(FAILED, 0, 1)
        if self.kind == CLEAN_NONE:
            return Expectation(SUCCEEDED, workers, 1)
        # Suspending deletes the workers; resuming creates them again, once.
        return Expectation(SUCCEEDED, 0, 2 if self.kind == SUSPEND_RESUME else 1)

    def body(self, workers: int) -> dict[str, Any]:
        run_policy: dict[str, Any] = {}
        if self.kind == CLEAN_ALL:
            run_policy["cleanPodPolicy"] = "All"
        elif self.kind == CLEAN_NONE:
            run_policy["cleanPodPolicy"] = "None"
        if self.kind == FAIL:
            run_policy["backoffLimit"] = 0  # one failed launcher pod fails the job
        return mpijob(
            self.name,
            workers=workers,
            launcher_runs_for=f"{self.runs_for}s",
            launcher_exit_code=1 if self.kind == FAIL else None,
            run_policy=run_policy,
        )


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
    return rng.randint(5, 40)


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
