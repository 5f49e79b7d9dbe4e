"""Plays the users of a chaos run in a background thread: submits each MPIJob at its time, suspends and
resumes or deletes it once it runs, and fails the workers of jobs that restart (chaos_failures).

The API server may be down at any tick (it is restarted on purpose): a tick that cannot reach it does
nothing and the next one tries again. Any other error is kept for the test to report.
"""

from __future__ import annotations

import threading
import time
import urllib.error
from dataclasses import dataclass, field

from mpioperator.testing.chaos_failures import (
    JOB_ROLE_LABEL,
    FailureInjector,
    Failures,
    Obj,
    by_job_name,
    condition_true,
)
from mpioperator.testing.chaos_plan import DELETE, RESTART_KINDS, SUSPEND_RESUME, ChaosPlan, JobPlan
from mpioperator.testing.cluster import LocalCluster
from mpioperator.testing.rest import RestError

TICK_SECONDS = 0.5

# A job's steps as the driver sees them; the last one of each kind means "nothing left to do".
WAITING = "waiting"
SUBMITTED = "submitted"
RUNNING = "running"
SUSPENDING = "suspending"
SUSPENDED = "suspended"
RESUMED = "resumed"
DELETED = "deleted"
ENDED = "ended"  # restart kinds: every planned failure injected and the job Succeeded or Failed
FINAL_STEP = {SUSPEND_RESUME: RESUMED, DELETE: DELETED, **{kind: ENDED for kind in RESTART_KINDS}}


@dataclass
class JobProgress:
    plan: JobPlan
    step: str = WAITING
    since: float = 0.0  # run time at which the current step began
    failures: Failures = field(default_factory=Failures)  # restart kinds: the failures injected

    def advance(self, step: str, now: float) -> None:
        self.step, self.since = step, now

    @property
    def done(self) -> bool:
        return self.step == FINAL_STEP.get(self.plan.kind, SUBMITTED)


class JobDriver(threading.Thread):
    def __init__(self, cluster: LocalCluster, namespace: str, plan: ChaosPlan) -> None:
        super().__init__(name="chaos-driver", daemon=True)
        self._cluster = cluster
        self._ns = namespace
        self._plan = plan
        self._halt = threading.Event()
        self.started = time.monotonic()
        self.jobs = {job.name: JobProgress(job) for job in plan.jobs}
        self._failures = FailureInjector(cluster, namespace, plan.workers)
        self.errors: list[str] = []
        self.unreachable_ticks = 0

    @property
    def path(self) -> str:
        return f"/apis/kubeflow.org/v2beta1/namespaces/{self._ns}/mpijobs"

    def now(self) -> float:
        return time.monotonic() - self.started

    def done(self) -> bool:
        return all(p.done for p in self.jobs.values())

    def stop(self) -> None:
        self._halt.set()
        self.join(timeout=30)

    def run(self) -> None:
        while not self._halt.wait(TICK_SECONDS):
            try:
                self.tick()
            except (RestError, urllib.error.URLError, ConnectionError, TimeoutError) as exc:
                if isinstance(exc, RestError) and exc.status < 500 and exc.status != 429:
                    self.errors.append(f"{self.now():.1f}s: {exc}")
                self.unreachable_ticks += 1
            except Exception as exc:  # kept for the test: a driver bug must not pass silently
                self.errors.append(f"{self.now():.1f}s: {type(exc).__name__}: {exc}")

    def tick(self) -> None:
        now = self.now()
        for progress in self.jobs.values():
            if progress.step == WAITING and now >= progress.plan.submit_at:
                self._submit(progress, now)
        active = [p for p in self.jobs.values() if p.step not in (WAITING, DELETED) and not p.done]
        if not active:
            return
        jobs = {j["metadata"]["name"]: j for j in self._cluster.rest.get(self.path)["items"]}
        workers = self._cluster.rest.get(
            f"/api/v1/namespaces/{self._ns}/pods?labelSelector={JOB_ROLE_LABEL}%3Dworker"
        )["items"]
        restarting = [p for p in active if p.plan.kind in RESTART_KINDS]
        launchers = by_job_name(self._failures.launchers() if restarting else [])
        by_job = by_job_name(workers)
        for progress in active:
            plan = progress.plan
            name = plan.name
            job, pods = jobs.get(name), by_job.get(name, [])
            if progress.plan.kind in RESTART_KINDS:
                if self._failures.step(plan, progress.failures, job, pods, launchers.get(name, []), now):
                    progress.advance(ENDED, now)
            else:
                self._step(progress, job, bool(pods), now)

    def injected(self) -> dict[str, int]:
        """How many worker failures landed in each job."""
        return {name: len(p.failures.injected) for name, p in self.jobs.items()}

    def _submit(self, progress: JobProgress, now: float) -> None:
        try:
            self._cluster.rest.create(self.path, progress.plan.body(self._plan.workers))
        except RestError as exc:
            if exc.status != 409:  # created by an earlier attempt whose answer was lost
                raise
        progress.advance(SUBMITTED, now)

    def _step(self, progress: JobProgress, job: Obj | None, has_workers: bool, now: float) -> None:
        plan = progress.plan
        if job is None:
            return
        if progress.step == SUBMITTED and condition_true(job, "Running"):
            progress.advance(RUNNING, now)
        elif progress.step == RUNNING and now >= progress.since + plan.act_after:
            if plan.kind == DELETE:
                try:
                    self._cluster.rest.delete(f"{self.path}/{plan.name}")
                except RestError as exc:
                    if exc.status != 404:  # deleted by an earlier attempt whose answer was lost
                        raise
                progress.advance(DELETED, now)
            else:
                self._suspend(plan.name, True)
                progress.advance(SUSPENDING, now)
        elif progress.step == SUSPENDING and condition_true(job, "Suspended") and not has_workers:
            progress.advance(SUSPENDED, now)
        elif progress.step == SUSPENDED and now >= progress.since + plan.act_after:
            self._suspend(plan.name, False)
            progress.advance(RESUMED, now)

    def _suspend(self, name: str, suspend: bool) -> None:
        self._cluster.rest.merge_patch(f"{self.path}/{name}", {"spec": {"runPolicy": {"suspend": suspend}}})
