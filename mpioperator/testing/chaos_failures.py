"""The failures a chaos run injects into jobs that restart as a whole: one worker of each attempt fails,
then the launcher of the attempt the job should end in completes.

kwok runs no containers, so the test plays the kubelet through the pods' status subresource: a worker's
phase becomes Failed (an eviction for the kind whose last failure must end it), a launcher's Succeeded.
These launchers are planned to run for an hour, so none completes on its own before its job's failures
have all been counted: kwok's launcher would complete whatever its workers do, where mpirun would fail
with a rank lost, and the operator rightly does not restart an attempt whose launcher completed.

Every write names the pod's uid, so it never lands on a later attempt's pod of the same name. The API
server may drop the answer to a write it made (it is restarted on purpose): such a failure is settled
from what is seen next.
"""

from __future__ import annotations

import datetime as dt
import urllib.parse
from dataclasses import dataclass, field
from typing import Any

from mpioperator.api.extensions import restarts
from mpioperator.testing.chaos_plan import RESTART, RESTART_ON_FAILURE, JobPlan
from mpioperator.testing.cluster import LocalCluster
from mpioperator.testing.rest import RestError

JOB_NAME_LABEL = "training.kubeflow.org/job-name"
JOB_ROLE_LABEL = "training.kubeflow.org/job-role"
# Answers that say the pod is not the one the write named any more (gone, or another uid).
REPLACED = (404, 409, 422)

Obj = dict[str, Any]


def condition_true(job: Obj | None, kind: str) -> bool:
    conditions = ((job or {}).get("status") or {}).get("conditions") or ()
    return any(c.get("type") == kind and c.get("status") == "True" for c in conditions)


def finished(job: Obj) -> bool:
    return condition_true(job, "Succeeded") or condition_true(job, "Failed")


def by_job_name(pods: list[Obj]) -> dict[str, list[Obj]]:
    found: dict[str, list[Obj]] = {}
    for pod in pods:
        found.setdefault((pod["metadata"].get("labels") or {}).get(JOB_NAME_LABEL, ""), []).append(pod)
    return found


def _phase(pod: Obj) -> str:
    return str((pod.get("status") or {}).get("phase") or "")


@dataclass(frozen=True, slots=True)
class Sent:
    """A worker failure sent into one attempt, whose answer may have been lost."""

    attempt: int
    pod: str
    uid: str


@dataclass
class Failures:
    """One job's failures so far."""

    injected: list[int] = field(default_factory=list)  # the attempts a worker failure landed in
    sent: Sent | None = None  # a failure whose outcome is not known yet
    seen: tuple[int, float] | None = None  # the attempt last seen running, and since when


class FailureInjector:
    def __init__(self, cluster: LocalCluster, namespace: str, workers: int) -> None:
        self._rest = cluster.rest
        self._ns = namespace
        self._workers = workers

    def launchers(self) -> list[Obj]:
        """The launcher pods of jobs that restart (they carry an attempt)."""
        selector = urllib.parse.quote(f"{restarts.ATTEMPT_LABEL},{JOB_ROLE_LABEL}=launcher", safe="")
        items: list[Obj] = self._rest.get(f"/api/v1/namespaces/{self._ns}/pods?labelSelector={selector}")[
            "items"
        ]
        return items

    def step(
        self,
        plan: JobPlan,
        done: Failures,
        job: Obj | None,
        workers: list[Obj],
        launchers: list[Obj],
        now: float,
    ) -> bool:
        """One tick for one job: True once every planned failure landed and the job ended."""
        if job is None:
            return False
        if done.sent is not None:
            self._settle(done, job, workers)
            if done.sent is not None:
                return False
        if finished(job):
            return True
        attempt = restarts.current_attempt(job)
        current = [p for p in workers if restarts.attempt_of(p) == attempt]
        if not self._runs_for(plan, done, job, current, attempt, now):
            return False
        if len(done.injected) < plan.failures:
            # An OnFailure job's later attempts end by their launcher's own failure.
            if attempt not in done.injected and not (plan.kind == RESTART_ON_FAILURE and attempt > 0):
                target = sorted(current, key=lambda p: str(p["metadata"]["name"]))[attempt % len(current)]
                done.sent = Sent(attempt, target["metadata"]["name"], target["metadata"]["uid"])
                self._fail(plan, done)
        elif plan.kind == RESTART:
            for launcher in launchers:
                if restarts.attempt_of(launcher) == attempt and _phase(launcher) == "Running":
                    self._complete(launcher)
        return False

    def _runs_for(
        self, plan: JobPlan, done: Failures, job: Obj, current: list[Obj], attempt: int, now: float
    ) -> bool:
        """Whether the attempt has been running (the job says so, all its workers run) for `act_after`."""
        running = (
            condition_true(job, "Running")
            and len(current) == self._workers
            and all(_phase(p) == "Running" and not p["metadata"].get("deletionTimestamp") for p in current)
        )
        if not running:
            done.seen = None
            return False
        if done.seen is None or done.seen[0] != attempt:
            done.seen = (attempt, now)
        return now >= done.seen[1] + plan.act_after

    def _patch_status(self, pod: str, uid: str, status: Obj) -> bool:
        """False when the pod named is gone or another pod has its name."""
        try:
            self._rest.merge_patch(
                f"/api/v1/namespaces/{self._ns}/pods/{pod}/status",
                {"metadata": {"uid": uid}, "status": status},
            )
        except RestError as exc:
            if exc.status not in REPLACED:
                raise
            return False
        return True

    def _fail(self, plan: JobPlan, done: Failures) -> None:
        sent = done.sent
        assert sent is not None
        status = {
            "phase": "Failed",
            "reason": plan.failure_reason,
            "message": "made to fail by the chaos test",
        }
        if self._patch_status(sent.pod, sent.uid, status):
            done.injected.append(sent.attempt)
            done.sent = None

    def _settle(self, done: Failures, job: Obj, workers: list[Obj]) -> None:
        """Whether a failure whose answer was lost (or whose pod was replaced) landed: the pod says Failed;
        or it is gone and the job went on to a later attempt (an attempt's pods go only after its restart
        was counted) or ended Failed (an exhausted job's last failure). A pod still running gets it again."""
        sent = done.sent
        assert sent is not None
        same = [p for p in workers if p["metadata"].get("uid") == sent.uid]
        attempt = restarts.current_attempt(job)
        if same and _phase(same[0]) != "Failed":
            done.sent = None  # not landed: the step that follows sends it again
            return
        if not same and attempt == sent.attempt and not finished(job):
            return  # gone, but neither the restart nor the end seen yet: the next tick reads a newer job
        if same or attempt > sent.attempt or condition_true(job, "Failed"):
            done.injected.append(sent.attempt)
        done.sent = None

    def _complete(self, launcher: Obj) -> None:
        """The launcher's mpirun exits 0, as kwok's stage would say it."""
        meta, spec = launcher["metadata"], launcher.get("spec") or {}
        started = (launcher.get("status") or {}).get("startTime")
        now = dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        containers = [
            {
                "name": c["name"],
                "image": c.get("image", ""),
                "ready": False,
                "started": False,
                "restartCount": 0,
                "state": {
                    "terminated": {
                        "exitCode": 0,
                        "reason": "Completed",
                        "startedAt": started,
                        "finishedAt": now,
                    }
                },
            }
            for c in spec.get("containers") or ()
        ]
        self._patch_status(meta["name"], meta["uid"], {"phase": "Succeeded", "containerStatuses": containers})
