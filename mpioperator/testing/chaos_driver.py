"""Plays the users of a chaos run in a background thread: submits each MPIJob at its time, suspends and
resumes or deletes it once it runs.

The API server may be down at any tick (it is restarted on purpose): a tick that cannot reach it does
nothing and the next one tries again. Any other error is kept for the test to report.
"""

from __future__ import annotations

import threading
import time
import urllib.error
from dataclasses import dataclass
from typing import Any

from mpioperator.testing.chaos_plan import DELETE, SUSPEND_RESUME, ChaosPlan, JobPlan
from mpioperator.testing.cluster import LocalCluster
from mpioperator.testing.rest import RestError

TICK_SECONDS = 0.5
JOB_NAME_LABEL = "training.kubeflow.org/job-name"
JOB_ROLE_LABEL = "training.kubeflow.org/job-role"

# A job's steps as the driver sees them; the last one of each kind means "nothing left to do".
WAITING = "waiting"
SUBMITTED = "submitted"
RUNNING = "running"
SUSPENDING = "suspending"
SUSPENDED = "suspended"
RESUMED = "resumed"
DELETED = "deleted"
FINAL_STEP = {SUSPEND_RESUME: RESUMED, DELETE: DELETED}

Obj = dict[str, Any]


def condition_true(job: Obj | None, kind: str) -> bool:
    conditions = ((job or {}).get("status") or {}).get("conditions") or ()
    return any(c.get("type") == kind and c.get("status") == "True" for c in conditions)


@dataclass
class JobProgress:
    plan: JobPlan
    step: str = WAITING
    since: float = 0.0  # run time at which the current step began

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
        with_workers = {(p["metadata"].get("labels") or {}).get(JOB_NAME_LABEL) for p in workers}
        for progress in active:
            self._step(progress, jobs.get(progress.plan.name), progress.plan.name in with_workers, now)

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
