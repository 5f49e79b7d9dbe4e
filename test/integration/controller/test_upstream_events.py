"""The Events of upstream's six integration scenarios (§6.4), compared as upstream's checker compares them.

Upstream's event checker diffs each whole Event against an expected one, ignoring only the metadata,
the timestamps, the count, the message and the involved object's resourceVersion: so type, reason,
involved object, `source` (component `mpi-job-controller`, no host), `reportingComponent`,
`reportingInstance` (empty) and every other field must be equal. We compare the message too (upstream's
text is the contract), and the whole list of the job's Events, not only the expected ones in order.
"""

from __future__ import annotations

import contextlib
import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from mpioperator.api.objects import Obj
from mpioperator.testing.cluster import LocalCluster
from mpioperator.testing.mpijobs import mpijob
from mpioperator.testing.rest import RestError
from mpioperator.testing.wait import async_wait_for
from test.integration.controller.actors import Actors, now
from test.integration.controller.conftest import Harness

COMPONENT = "mpi-job-controller"
# What upstream's checker leaves out of its comparison (and TypeMeta, which list items do not carry).
NOT_COMPARED = ("metadata", "firstTimestamp", "lastTimestamp", "count", "kind", "apiVersion")
JOB = "job"


def compared(event: Obj) -> Obj:
    """An Event as upstream's checker sees it, plus its message."""
    view = {k: v for k, v in event.items() if k not in NOT_COMPARED}
    view["involvedObject"] = {k: v for k, v in event["involvedObject"].items() if k != "resourceVersion"}
    return view


def upstream_event(job: Obj, event_type: str, reason: str, message: str) -> Obj:
    """The Event upstream's recorder writes about `job`, in the fields its tests compare."""
    meta = job["metadata"]
    return {
        "involvedObject": {
            "kind": "MPIJob",
            "namespace": meta["namespace"],
            "name": meta["name"],
            "uid": meta["uid"],
            "apiVersion": "kubeflow.org/v2beta1",
        },
        "reason": reason,
        "message": message,
        "type": event_type,
        "source": {"component": COMPONENT},
        "eventTime": None,
        "reportingComponent": COMPONENT,
        "reportingInstance": "",
    }


class Expected:
    """The job's Events so far, grown as each step of a scenario adds one."""

    def __init__(self, a: Actors, job: Obj) -> None:
        self.a = a
        self.job = job
        self.events: list[Obj] = []

    def add(self, event_type: str, reason: str, message: str) -> None:
        self.events.append(upstream_event(self.job, event_type, reason, message))

    async def seen(self) -> None:
        async def probe() -> list[Obj]:
            return [compared(e) for e in self.a.events(self.job["metadata"]["name"])]

        await async_wait_for(
            probe,
            timeout=30,
            what=f"exactly these events: {self.events}",
            done=lambda got: got == self.events,
        )


def _created(a: Actors, expected: Expected) -> None:
    expected.add("Normal", "MPIJobCreated", f"MPIJob {a.ns}/{JOB} is created.")


def _running(a: Actors, expected: Expected) -> None:
    expected.add("Normal", "MPIJobRunning", f"MPIJob {a.ns}/{JOB} is running")


def _job_body(**kwargs: Any) -> Obj:
    return mpijob(JOB, workers=2, **kwargs)


async def _replica_statuses(a: Actors, want: Obj) -> None:
    await a.until_true(lambda: a.status(JOB).get("replicaStatuses") == want, f"replica statuses {want}")


async def test_success_scenario_records_upstreams_events(harness: Harness) -> None:
    """TestMPIJobSuccess: Created; Running once the launcher pod runs; Succeeded when its Job completes."""
    a = Actors(harness.cluster, harness.namespace)
    job = a.submit(_job_body(run_policy={"cleanPodPolicy": "Running"}))
    expected = Expected(a, job)
    _created(a, expected)
    await a.until(lambda: a.launcher_job(JOB), "launcher Job")
    await _replica_statuses(a, {"Launcher": {}, "Worker": {}})
    await expected.seen()

    a.set_workers(JOB, "Running")
    await _replica_statuses(a, {"Launcher": {}, "Worker": {"active": 2}})
    _running(a, expected)
    a.create_launcher_pod(JOB)
    await _replica_statuses(a, {"Launcher": {"active": 1}, "Worker": {"active": 2}})
    await expected.seen()

    expected.add("Normal", "MPIJobSucceeded", f"MPIJob {a.ns}/{JOB} successfully completed.")
    a.set_launcher_job(JOB, "Complete")
    await _replica_statuses(a, {"Launcher": {"succeeded": 1}, "Worker": {}})
    await expected.seen()


async def test_wait_for_workers_scenario_records_upstreams_events(harness: Harness) -> None:
    """TestMPIJobWaitWorkers: Created; no launcher until the workers are Ready; then Running."""
    a = Actors(harness.cluster, harness.namespace)
    body = _job_body(run_policy={"cleanPodPolicy": "Running"})
    body["spec"]["launcherCreationPolicy"] = "WaitForWorkersReady"
    expected = Expected(a, a.submit(body))
    _created(a, expected)
    await _replica_statuses(a, {"Worker": {}})
    await expected.seen()

    await a.until_true(lambda: len(a.worker_pods(JOB)) == 2, "two workers")
    a.set_workers(JOB, "Running")
    await _replica_statuses(a, {"Worker": {"active": 2}})
    assert a.launcher_job(JOB) is None
    a.set_workers(JOB, "Running", ready=True)
    await _replica_statuses(a, {"Launcher": {}, "Worker": {"active": 2}})
    _running(a, expected)
    a.create_launcher_pod(JOB)
    await _replica_statuses(a, {"Launcher": {"active": 1}, "Worker": {"active": 2}})
    await expected.seen()


async def test_suspend_and_resume_scenario_records_upstreams_events(harness: Harness) -> None:
    """TestMPIJobResumingAndSuspending: Created and Suspended; Resumed; Running. Suspending again repeats
    Suspended, which (as client-go's correlator does) raises the first Suspended Event's count."""
    a = Actors(harness.cluster, harness.namespace)
    expected = Expected(a, a.submit(_job_body(run_policy={"cleanPodPolicy": "Running", "suspend": True})))
    _created(a, expected)
    expected.add("Normal", "MPIJobSuspended", "MPIJob suspended")
    await a.until(lambda: a.launcher_job(JOB), "launcher Job")
    await _replica_statuses(a, {"Launcher": {}, "Worker": {}})
    await expected.seen()

    a.patch_spec(JOB, {"spec": {"runPolicy": {"suspend": False}}})
    expected.add("Normal", "MPIJobResumed", "MPIJob resumed")
    await a.until_true(lambda: len(a.worker_pods(JOB)) == 2, "two workers")
    await expected.seen()

    a.set_workers(JOB, "Running")
    _running(a, expected)
    launcher_pod = a.create_launcher_pod(JOB)
    await _replica_statuses(a, {"Launcher": {"active": 1}, "Worker": {"active": 2}})
    await expected.seen()

    a.patch_spec(JOB, {"spec": {"runPolicy": {"suspend": True}}})
    a.rest.delete(a.path("pods", launcher_pod))
    await _replica_statuses(a, {"Launcher": {}, "Worker": {}})
    await expected.seen()
    suspended = next(e for e in a.events(JOB) if e["reason"] == "MPIJobSuspended")
    await a.until_true(
        lambda: next(e for e in a.events(JOB) if e["reason"] == "MPIJobSuspended").get("count") == 2,
        "the Suspended event counted twice",
    )
    assert suspended["type"] == "Normal"


async def test_failure_scenario_records_upstreams_events(harness: Harness) -> None:
    """TestMPIJobFailure: a failed launcher pod alone adds no event; the launcher Job's Failed condition
    (no reason given) adds a Warning MPIJobFailed."""
    a = Actors(harness.cluster, harness.namespace)
    expected = Expected(a, a.submit(_job_body(run_policy={"cleanPodPolicy": "Running"})))
    _created(a, expected)
    await a.until(lambda: a.launcher_job(JOB), "launcher Job")
    a.set_workers(JOB, "Running")
    _running(a, expected)
    launcher_pod = a.create_launcher_pod(JOB)
    await _replica_statuses(a, {"Launcher": {"active": 1}, "Worker": {"active": 2}})
    await expected.seen()

    a.set_pod(launcher_pod, "Failed")
    a.set_launcher_failed_count(JOB, 1)
    await _replica_statuses(a, {"Launcher": {"failed": 1}, "Worker": {"active": 2}})
    assert a.condition(JOB, "Failed") is None
    await expected.seen()

    expected.add("Warning", "MPIJobFailed", f"MPIJob {a.ns}/{JOB} has failed")
    launcher = a.launcher_job(JOB)
    assert launcher is not None
    launcher["status"]["failed"] = 2
    # No reason, as upstream's test; today's API server also wants the FailureTarget before Failed.
    stamp = now()
    launcher["status"]["conditions"] = [
        {"type": kind, "status": "True", "lastTransitionTime": stamp, "lastProbeTime": stamp}
        for kind in ("FailureTarget", "Failed")
    ]
    a.rest.request("PUT", a.path("jobs", f"{JOB}-launcher") + "/status", launcher)
    await _replica_statuses(a, {"Launcher": {"failed": 2}, "Worker": {}})
    await expected.seen()


@pytest.fixture
def priority_class(podgroup_crds: LocalCluster) -> Iterator[str]:
    name = f"test-pc-{uuid.uuid4().hex[:6]}"
    podgroup_crds.rest.create(
        "/apis/scheduling.k8s.io/v1/priorityclasses", {"metadata": {"name": name}, "value": 100_000}
    )
    yield name
    with contextlib.suppress(RestError):
        podgroup_crds.rest.delete(f"/apis/scheduling.k8s.io/v1/priorityclasses/{name}")


def _pod_group(a: Actors, root: str) -> Obj | None:
    return a.rest.get_or_none(f"{root}/namespaces/{a.ns}/podgroups/{JOB}")


async def _submitted_with_its_pod_group(a: Actors, body: Obj, priority_class: str, root: str) -> Expected:
    """Submits `body` with its launcher in `priority_class`; once its PodGroup (under `root`) and replica
    statuses are there, only MPIJobCreated has been recorded. The expectations, for what follows."""
    body["spec"]["mpiReplicaSpecs"]["Launcher"]["template"]["spec"]["priorityClassName"] = priority_class
    expected = Expected(a, a.submit(body))
    _created(a, expected)
    await a.until(lambda: _pod_group(a, root), "the PodGroup")
    await _replica_statuses(a, {"Launcher": {}, "Worker": {}})
    await expected.seen()
    return expected


async def test_scheduler_plugins_scenario_records_upstreams_events(
    plugins: Harness, priority_class: str
) -> None:
    """TestMPIJobWithSchedulerPlugins: Created, and no other event while the PodGroup follows the spec."""
    a = Actors(plugins.cluster, plugins.namespace)
    root = "/apis/scheduling.x-k8s.io/v1alpha1"
    body = _job_body(
        run_policy={"cleanPodPolicy": "Running", "schedulingPolicy": {"scheduleTimeoutSeconds": 900}}
    )
    expected = await _submitted_with_its_pod_group(a, body, priority_class, root)

    a.patch_spec(JOB, {"spec": {"runPolicy": {"schedulingPolicy": {"scheduleTimeoutSeconds": 10}}}})
    await a.until_true(
        lambda: (_pod_group(a, root) or {}).get("spec", {}).get("scheduleTimeoutSeconds") == 10,
        "the PodGroup's new timeout",
    )
    await a.until_true(plugins.controller.queue_idle, "the work queue to drain")
    await expected.seen()


async def test_volcano_scenario_records_upstreams_events(volcano: Harness, priority_class: str) -> None:
    """TestMPIJobWithVolcanoScheduler: Created, and no other event while the PodGroup follows the spec."""
    a = Actors(volcano.cluster, volcano.namespace)
    root = "/apis/scheduling.volcano.sh/v1beta1"
    body = _job_body(
        run_policy={
            "cleanPodPolicy": "Running",
            "schedulingPolicy": {"queue": "default", "priorityClass": priority_class},
        }
    )
    expected = await _submitted_with_its_pod_group(a, body, priority_class, root)

    a.patch_spec(
        JOB, {"spec": {"runPolicy": {"schedulingPolicy": {"minAvailable": 2, "queue": "queue-for-mpijob"}}}}
    )
    await a.until_true(
        lambda: (_pod_group(a, root) or {}).get("spec", {}).get("queue") == "queue-for-mpijob",
        "the PodGroup's new queue",
    )
    pod_group = _pod_group(a, root)
    assert pod_group is not None and pod_group["spec"]["minMember"] == 2
    await a.until_true(volcano.controller.queue_idle, "the work queue to drain")
    await expected.seen()


async def test_a_worker_pod_the_api_server_rejects_is_reported_once_in_its_words(harness: Harness) -> None:
    """The API server's message alone, not our exception's `422 Invalid: ...`. Upstream says it as
    `worker pod created failed: <err>` (MPIJobFailed) on every retry; a refusal for good holds the job
    instead and says it once, naming the object (decisions-local L11)."""
    a = Actors(harness.cluster, harness.namespace)
    body = _job_body()
    # The CRD takes any container name; only pod validation insists on a DNS label.
    body["spec"]["mpiReplicaSpecs"]["Worker"]["template"]["spec"]["containers"][0]["name"] = "Bad_Name"
    expected = Expected(a, a.submit(body))
    _created(a, expected)
    rejection = (
        f'Pod "{JOB}-worker-0" is invalid: spec.containers[0].name: Invalid value: "Bad_Name": a lowercase '
        "RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end "
        "with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is "
        "'[a-z0-9]([-a-z0-9]*[a-z0-9])?')"
    )
    expected.add("Warning", "ChildInvalid", f"Pod {JOB}-worker-0 could not be created: {rejection}")
    await expected.seen()
