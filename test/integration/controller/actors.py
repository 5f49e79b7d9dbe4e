"""What kubelet and the Job controller would do, done by hand (there is no kcm on the apiserver tier)."""

from __future__ import annotations

import asyncio
import contextlib
import datetime as dt
import time
from collections.abc import AsyncIterator, Callable
from typing import Any, TypeVar

from mpioperator.testing.cluster import LocalCluster
from mpioperator.testing.rest import RestError
from mpioperator.testing.wait import async_wait_for

T = TypeVar("T")
TIMEOUT = 30.0


def job_selector(job: str) -> dict[str, str]:
    """The labels upstream selects the pods of MPIJob `job` by (its Service's selector)."""
    return {"training.kubeflow.org/operator-name": "mpi-operator", "training.kubeflow.org/job-name": job}


def now() -> str:
    return dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


class Actors:
    def __init__(self, cluster: LocalCluster, namespace: str) -> None:
        self.cluster = cluster
        self.ns = namespace
        self.rest = cluster.rest

    # --- reading -------------------------------------------------------------------------------
    def path(self, kind: str, name: str | None = None) -> str:
        roots = {
            "mpijobs": "/apis/kubeflow.org/v2beta1",
            "jobs": "/apis/batch/v1",
            "pods": "/api/v1",
            "services": "/api/v1",
            "configmaps": "/api/v1",
            "secrets": "/api/v1",
            "events": "/api/v1",
        }
        base = f"{roots[kind]}/namespaces/{self.ns}/{kind}"
        return f"{base}/{name}" if name else base

    def get(self, kind: str, name: str) -> dict[str, Any] | None:
        return self.rest.get_or_none(self.path(kind, name))

    def items(self, kind: str, selector: str = "") -> list[dict[str, Any]]:
        query = f"?labelSelector={selector}" if selector else ""
        listed: list[dict[str, Any]] = self.rest.get(self.path(kind) + query)["items"]
        return listed

    def worker_pods(self, job: str) -> list[dict[str, Any]]:
        selector = "training.kubeflow.org/job-role=worker,training.kubeflow.org/job-name=" + job
        return sorted(
            (p for p in self.items("pods", selector) if not p["metadata"].get("deletionTimestamp")),
            key=lambda p: p["metadata"]["name"],
        )

    def events(self, job: str) -> list[dict[str, Any]]:
        events = [
            e
            for e in self.items("events")
            if e["involvedObject"].get("name") == job and e["involvedObject"].get("kind") == "MPIJob"
        ]
        return sorted(events, key=lambda e: (e.get("firstTimestamp") or "", e["metadata"]["name"]))

    def event_reasons(self, job: str) -> list[str]:
        return [e["reason"] for e in self.events(job)]

    def status(self, job: str) -> dict[str, Any]:
        found = self.get("mpijobs", job)
        return (found or {}).get("status") or {}

    def condition(self, job: str, cond_type: str) -> dict[str, Any] | None:
        for cond in self.status(job).get("conditions") or ():
            if cond["type"] == cond_type:
                return dict(cond)
        return None

    async def until(self, probe: Callable[[], T], what: str, timeout: float = TIMEOUT) -> T:
        async def call() -> T:
            return probe()

        return await async_wait_for(call, timeout=timeout, what=what)

    async def until_true(self, probe: Callable[[], bool], what: str, timeout: float = TIMEOUT) -> None:
        await self.until(probe, what, timeout)

    # --- writing, as users and other controllers would ------------------------------------------
    def submit(self, body: dict[str, Any]) -> dict[str, Any]:
        created: dict[str, Any] = self.rest.create(self.path("mpijobs"), body)
        return created

    async def submitted_with_workers(self, body: dict[str, Any], timeout: float = TIMEOUT) -> None:
        """Submit the job and wait until the controller has made all its worker pods."""
        name, workers = body["metadata"]["name"], body["spec"]["mpiReplicaSpecs"]["Worker"]["replicas"]
        self.submit(body)
        await self.until_true(
            lambda: len(self.worker_pods(name)) == workers, f"{name}'s {workers} workers", timeout
        )

    def patch_spec(self, job: str, patch: dict[str, Any]) -> None:
        self.rest.merge_patch(self.path("mpijobs", job), patch)

    def set_pod(self, name: str, phase: str, *, ready: bool | None = None, reason: str | None = None) -> None:
        status: dict[str, Any] = {"phase": phase}
        if ready is not None:
            status["conditions"] = [
                {"type": "Ready", "status": "True" if ready else "False", "lastTransitionTime": now()}
            ]
        if reason is not None:
            status["reason"] = reason
            status["message"] = f"pod {reason.lower()}"
        self.rest.merge_patch(self.path("pods", name) + "/status", {"status": status})

    def set_workers(self, job: str, phase: str, *, ready: bool | None = None) -> None:
        for pod in self.worker_pods(job):
            self.set_pod(pod["metadata"]["name"], phase, ready=ready)

    def launcher_job(self, job: str) -> dict[str, Any] | None:
        return self.get("jobs", f"{job}-launcher")

    async def launched(self, job: str) -> str:
        """Once the job's launcher Job is made: its workers Running and Ready and its launcher pod made (its
        name returned), as the kubelet and the Job controller would do."""
        await self.until(lambda: self.launcher_job(job), f"{job}'s launcher Job")
        self.set_workers(job, "Running", ready=True)
        return self.create_launcher_pod(job)

    def create_launcher_pod(
        self, job: str, suffix: str = "abcde", phase: str = "Running", launcher: dict[str, Any] | None = None
    ) -> str:
        """A pod as the Job controller would make it: the Job's template, selector labels and owner (of
        `launcher`, the Job as the caller read it, else as read now)."""
        launcher = launcher or self.launcher_job(job)
        assert launcher is not None, "launcher Job must exist"
        template = launcher["spec"]["template"]
        labels = dict(template["metadata"].get("labels") or {})
        labels.update(launcher["spec"]["selector"]["matchLabels"])
        name = f"{job}-launcher-{suffix}"
        pod = {
            "metadata": {
                "name": name,
                "labels": labels,
                "annotations": template["metadata"].get("annotations") or {},
                "ownerReferences": [
                    {
                        "apiVersion": "batch/v1",
                        "kind": "Job",
                        "name": launcher["metadata"]["name"],
                        "uid": launcher["metadata"]["uid"],
                        "controller": True,
                        "blockOwnerDeletion": True,
                    }
                ],
            },
            "spec": template["spec"],
        }
        self.rest.create(self.path("pods"), pod)
        self.set_pod(name, phase)
        return name

    def set_launcher_job(
        self, job: str, outcome: str, *, reason: str = "", message: str = "", failed: int = 0
    ) -> None:
        """Finish the launcher Job the way the Job controller does (the terminal condition after its target)."""
        launcher = self.launcher_job(job)
        assert launcher is not None
        stamp = now()
        status = dict(launcher.get("status") or {})
        status.setdefault("startTime", stamp)
        if outcome == "Complete":
            status["conditions"] = [
                {
                    "type": "SuccessCriteriaMet",
                    "status": "True",
                    "lastTransitionTime": stamp,
                    "lastProbeTime": stamp,
                },
                {"type": "Complete", "status": "True", "lastTransitionTime": stamp, "lastProbeTime": stamp},
            ]
            status["completionTime"] = stamp
            status["succeeded"] = 1
        elif outcome == "Failed":
            status["conditions"] = [
                {
                    "type": "FailureTarget",
                    "status": "True",
                    "reason": reason or "FailedForTest",
                    "message": message or "failed for the test",
                    "lastTransitionTime": stamp,
                    "lastProbeTime": stamp,
                },
                {
                    "type": "Failed",
                    "status": "True",
                    "reason": reason or "FailedForTest",
                    "message": message or "failed for the test",
                    "lastTransitionTime": stamp,
                    "lastProbeTime": stamp,
                },
            ]
        if failed:
            status["failed"] = failed
        launcher["status"] = status
        self.rest.request("PUT", self.path("jobs", f"{job}-launcher") + "/status", launcher)

    def set_launcher_failed_count(self, job: str, failed: int) -> None:
        launcher = self.launcher_job(job)
        assert launcher is not None
        launcher.setdefault("status", {})["failed"] = failed
        launcher["status"].setdefault("startTime", now())
        self.rest.request("PUT", self.path("jobs", f"{job}-launcher") + "/status", launcher)


class LauncherJobController:
    """Plays kube-controller-manager's Job controller for one launcher Job, in a background task.

    While the Job is neither finished nor suspended it keeps one launcher pod alive, replacing any pod
    that is deleted or ends (so a controller that deletes launcher pods instead of stopping the Job
    shows up as churn). When the Job is suspended it deletes its active pods once and reports itself
    Suspended, with no active pod. Each pod it creates is recorded with the time it was made.
    """

    def __init__(self, actors: Actors, job: str, *, phase: str = "Running") -> None:
        self.a = actors
        self.job = job
        self.phase = phase
        self.created: list[tuple[float, str]] = []
        self.deleted_for_suspension: list[str] = []
        self._task: asyncio.Task[None] | None = None

    def created_since(self, moment: float) -> list[str]:
        return [name for at, name in self.created if at >= moment]

    def active_pods(self) -> list[dict[str, Any]]:
        launcher = self.a.launcher_job(self.job)
        if launcher is None:
            return []
        uid = launcher["metadata"]["uid"]
        return [
            p
            for p in self.a.items("pods")
            if any(ref.get("uid") == uid for ref in p["metadata"].get("ownerReferences") or ())
            and not p["metadata"].get("deletionTimestamp")
            and p.get("status", {}).get("phase") in ("Pending", "Running")
        ]

    def step(self) -> None:
        launcher = self.a.launcher_job(self.job)
        if launcher is None or _finished(launcher):
            return
        active = self.active_pods()
        if launcher["spec"].get("suspend"):
            for pod in active:
                name = pod["metadata"]["name"]
                with contextlib.suppress(RestError):
                    self.a.rest.delete(self.a.path("pods", name))
                self.deleted_for_suspension.append(name)
            if not _has_condition(launcher, "Suspended"):
                stamp = now()
                status = dict(launcher.get("status") or {})
                status.pop("active", None)
                status["conditions"] = [
                    *(status.get("conditions") or []),
                    {
                        "type": "Suspended",
                        "status": "True",
                        "reason": "JobSuspended",
                        "message": "Job suspended",
                        "lastTransitionTime": stamp,
                        "lastProbeTime": stamp,
                    },
                ]
                launcher["status"] = status
                with contextlib.suppress(RestError):  # a conflict: the next step retries
                    self.a.rest.request(
                        "PUT", self.a.path("jobs", f"{self.job}-launcher") + "/status", launcher
                    )
            return
        if not active:
            suffix = f"{len(self.created):05d}"
            # The Job as read above: it may be gone by now (a whole-job restart deletes it), and the
            # pod is then made for it all the same, as an informer-driven Job controller could.
            try:
                name = self.a.create_launcher_pod(
                    self.job, suffix=suffix, phase=self.phase, launcher=launcher
                )
            except RestError as error:
                if error.status != 404:
                    raise
                # Made, then deleted (the restart's, or the garbage collector's, as its Job was gone)
                # before its status was written: made all the same.
                name = f"{self.job}-launcher-{suffix}"
            self.created.append((time.monotonic(), name))

    async def _run(self) -> None:
        while True:
            await asyncio.to_thread(self.step)
            await asyncio.sleep(0.05)  # the actor's own pace, as a controller's resync; no test waits on it

    def start(self) -> None:
        self._task = asyncio.ensure_future(self._run())

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None


def _has_condition(obj: dict[str, Any], cond_type: str) -> bool:
    return any(
        c.get("type") == cond_type and c.get("status") == "True"
        for c in (obj.get("status") or {}).get("conditions") or ()
    )


def _finished(launcher: dict[str, Any]) -> bool:
    return _has_condition(launcher, "Complete") or _has_condition(launcher, "Failed")


@contextlib.asynccontextmanager
async def submitted(
    a: Actors, body: dict[str, Any], *, phase: str = "Running"
) -> AsyncIterator[LauncherJobController]:
    """The job submitted, with kube-controller-manager's Job controller played for its launcher Job (its
    pods in `phase`) until the block ends."""
    a.submit(body)
    job_controller = LauncherJobController(a, body["metadata"]["name"], phase=phase)
    job_controller.start()
    try:
        yield job_controller
    finally:
        await job_controller.stop()
