"""MultiKueue across two local clusters: a job queued on the manager runs on the worker under our operator.

Both clusters are the full tier with Kueue and our operator; the same namespace and LocalQueue exist on
both. The manager's ClusterQueue carries a MultiKueue AdmissionCheck, so a job queued there
(`spec.runPolicy.managedBy: kueue.x-k8s.io/multikueue`) is copied to the worker by the manager's Kueue,
without managedBy; the worker's Kueue admits the copy and our operator runs it there. The manager's
operator must leave the original alone even once Kueue unsuspends it; the copy's status is what comes back.

The manager is the session's Kueue cluster (`kueue_cluster`, shared with test_kueue.py: one cluster
start fewer), with its own flavor, queues and namespace, deleted at the end; the worker is this module's.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import pytest
import yaml

from mpioperator.api.constants import MULTIKUEUE_CONTROLLER
from mpioperator.testing import kueue, multikueue
from mpioperator.testing.cluster import LocalCluster
from mpioperator.testing.install import install_manifests
from mpioperator.testing.jobs import Job
from mpioperator.testing.kueue_objects import cluster_queue, local_queue, path, queued, resource_flavor
from mpioperator.testing.mpijobs import mpijob
from mpioperator.testing.nodes import NodeShape
from mpioperator.testing.operator import OperatorProcess
from mpioperator.testing.wait import ProbeAborted, wait_for
from test.conftest import _start
from test.e2e.conftest import _run_operator

NAMESPACE = "multikueue-jobs"
QUEUE = "team-queue"
WORKER = "worker1"
FLAVOR = "multikueue-flavor"
MANAGER_QUEUE = "multikueue-manager-cq"
CHECK = "multikueue"
TIMEOUT = 180.0
# What MultiKueue marks the worker's copy of a job with: the manager's Workload, as an annotation (a
# label before Kueue v0.18's WorkloadIdentifierAnnotations, on by default), and the origin, as a label.
PREBUILT_WORKLOAD_ANNOTATION = "kueue.x-k8s.io/prebuilt-workload-name"
ORIGIN_LABEL = "kueue.x-k8s.io/multikueue-origin"
# Status fields of ours (docs/extensions.md) that a running job's status always has.
EXTENSIONS = ("phase", "podCounts", "aggregate", "tasks")
# What our operator makes for a job, by REST collection.
CHILDREN = (
    ("/api/v1", "services"),
    ("/api/v1", "configmaps"),
    ("/api/v1", "secrets"),
    ("/api/v1", "pods"),
    ("/apis/batch/v1", "jobs"),
)


@dataclass
class Side:
    name: str
    cluster: LocalCluster
    kueue: kueue.Kueue
    operator: OperatorProcess


@pytest.fixture(scope="module")
def sides(
    kueue_cluster: LocalCluster,
    kueue_process: kueue.Kueue,
    kueue_operator: OperatorProcess,
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[tuple[Side, Side]]:
    """(manager, worker): the manager is the session's Kueue cluster, the worker this module's own, each
    with Kueue and our operator; the manager connected to the worker."""
    manager = Side("manager", kueue_cluster, kueue_process, kueue_operator)
    namespace = f"/api/v1/namespaces/{NAMESPACE}"
    manager.cluster.rest.create("/api/v1/namespaces", {"metadata": {"name": NAMESPACE}})
    queues = [
        resource_flavor(FLAVOR),
        cluster_queue(MANAGER_QUEUE, quotas={FLAVOR: {"cpu": "8"}}, admission_checks=[CHECK]),
        local_queue(QUEUE, NAMESPACE, MANAGER_QUEUE),
    ]
    connected: list[dict[str, Any]] = []
    worker_cluster = _start(LocalCluster("full", nodes=0))
    operators: Iterator[OperatorProcess] | None = None
    try:
        install_manifests(worker_cluster)
        worker_cluster.rest.create("/api/v1/namespaces", {"metadata": {"name": NAMESPACE}})
        worker_kueue = kueue.start(worker_cluster, tmp_path_factory.mktemp("kueue-worker"))
        operators = _run_operator(worker_cluster, tmp_path_factory)
        worker = Side("worker", worker_cluster, worker_kueue, next(operators))
        worker_cluster.add_nodes(2, NodeShape(cpu="4"))
        worker.kueue.apply(
            resource_flavor(FLAVOR),
            cluster_queue("worker-cq", quotas={FLAVOR: {"cpu": "8"}}),
            local_queue(QUEUE, NAMESPACE, "worker-cq"),
        )
        connected = multikueue.connect(manager.cluster, {WORKER: worker.cluster}, config=CHECK, check=CHECK)
        # Applied after the check exists, so the manager's ClusterQueue is active from the start.
        manager.kueue.apply(*queues)
        wait_for(
            lambda: multikueue.is_active(manager.cluster.rest.get(path("ClusterQueue", MANAGER_QUEUE))),
            timeout=TIMEOUT,
            what="the manager's ClusterQueue Active",
        )
        yield manager, worker
    finally:
        # The session's cluster outlives this module: its queues and MultiKueue objects go, so that its
        # Kueue stops reaching for a worker that is gone.
        manager.cluster.kubectl(
            "delete",
            "--ignore-not-found",
            "--wait=false",
            "-f",
            "-",
            input=yaml.safe_dump_all(list(reversed(queues)) + list(reversed(connected))),
            check=False,
        )
        manager.cluster.rest.delete(namespace)
        if operators is not None:
            next(operators, None)  # past its yield: the operator is terminated
        worker_cluster.stop()


def _remote_job(name: str, *, runs_for: str) -> dict[str, Any]:
    """A queued job for the manager, with cpu requests (Kueue's quota counts requests)."""
    job = mpijob(name, workers=2, launcher_runs_for=runs_for, run_policy={"managedBy": MULTIKUEUE_CONTROLLER})
    for spec in job["spec"]["mpiReplicaSpecs"].values():
        for container in spec["template"]["spec"]["containers"]:
            container["resources"] = {"requests": {"cpu": "500m"}}
    return queued(job, QUEUE)


def _children(cluster: LocalCluster, job: str) -> list[str]:
    """What our operator made for `job` on `cluster` (anything named after it), not yet being deleted."""
    found = []
    for root, plural in CHILDREN:
        for item in cluster.rest.get(f"{root}/namespaces/{NAMESPACE}/{plural}")["items"]:
            meta = item["metadata"]
            if meta["name"].startswith(f"{job}-") and not meta.get("deletionTimestamp"):
                found.append(f"{plural}/{meta['name']}")
    return sorted(found)


class LeftAloneViolation(ProbeAborted, AssertionError):
    """Seen while waiting: what must never happen did; waiting longer cannot undo it."""


def _assert_left_alone_by_a_syncing_operator(manager: Side, name: str) -> None:
    """The manager's operator is alive and syncs `name` as it is now, and makes nothing for it.

    The job is touched (a label, which our operator syncs like any other update) and the manager's children
    of the job are read on every poll from the touch until the operator's log shows a sync of the job that
    began after the touch and ended without error, then once more. An operator that is dead, stuck or not
    watching the job never logs that sync, and the test fails instead of seeing an empty list."""
    key = f"{NAMESPACE}/{name}"
    operator = manager.operator

    def synced_since_touch() -> int:
        if not operator.running:
            raise LeftAloneViolation(f"the manager's operator is not running:\n{operator.log_tail()}")
        children = _children(manager.cluster, name)
        if children:
            raise LeftAloneViolation(f"the manager's operator made {children} for {name}")
        return operator.syncs_started_after(key, touched)

    touched = datetime.now(UTC)
    Job(manager.cluster, NAMESPACE, name).patch(
        {"metadata": {"labels": {"touched": touched.strftime("%H%M%S")}}}
    )
    wait_for(
        synced_since_touch,
        timeout=TIMEOUT,
        what=f"the manager's operator to sync {key} after the touch",
        done=lambda syncs: syncs >= 1,
    )
    assert _children(manager.cluster, name) == [], "the manager's operator left the job alone"


def _left_over(cluster: LocalCluster, job: str) -> list[str]:
    """The job, its Workloads, pods and Jobs on `cluster`, even those still being deleted."""
    found = []
    if Job(cluster, NAMESPACE, job).get() is not None:
        found.append(f"mpijobs/{job}")
    for kind_path, plural in (
        (path("Workload", namespace=NAMESPACE), "workloads"),
        (f"/api/v1/namespaces/{NAMESPACE}/pods", "pods"),
        (f"/apis/batch/v1/namespaces/{NAMESPACE}/jobs", "jobs"),
    ):
        for item in cluster.rest.get(kind_path)["items"]:
            meta = item["metadata"]
            owners = [ref.get("name") for ref in meta.get("ownerReferences") or ()]
            if meta["name"].startswith(f"{job}-") or job in owners or f"mpijob-{job}-" in meta["name"]:
                found.append(f"{plural}/{meta['name']}")
    return sorted(found)


def _wait_cleaned(side: Side, job: str) -> None:
    wait_for(
        lambda: _left_over(side.cluster, job),
        timeout=TIMEOUT,
        what=f"nothing of {job} left on the {side.name}",
        done=lambda left: not left,
    )


def _listing(manager: Side, worker: Side, moment: str) -> str:
    parts = [f"===== {moment} ====="]
    for side in (manager, worker):
        result = side.cluster.kubectl("get", "mpijobs,workloads,jobs,pods", "-A", "-o", "wide")
        out = result.stdout or result.stderr  # "No resources found" goes to stderr
        parts.append(f"--- {side.name}: kubectl get mpijobs,workloads,jobs,pods -A -o wide\n{out}")
    return "\n".join(parts)


def _condition_types(job: Job) -> list[str]:
    return [c["type"] for c in ((job.get() or {}).get("status") or {}).get("conditions") or ()]


def _wait_running_on_worker(worker: Side, name: str) -> dict[str, Any]:
    """The worker's copy once our operator there runs it (launcher and both workers made)."""
    copy = Job(worker.cluster, NAMESPACE, name)
    wait_for(lambda: copy.condition("Running"), timeout=TIMEOUT, what=f"{name} Running on the worker")
    wait_for(lambda: len(copy.pods()) == 3, timeout=TIMEOUT, what=f"{name}'s 3 pods on the worker")
    body = copy.get()
    assert body is not None
    return body


def test_job_queued_on_the_manager_runs_on_the_worker_and_its_status_comes_back(
    sides: tuple[Side, Side],
) -> None:
    manager, worker = sides
    name = "pi-far"
    original = Job(manager.cluster, NAMESPACE, name).submit(_remote_job(name, runs_for="6s"))

    copy = _wait_running_on_worker(worker, name)
    annotations = copy["metadata"].get("annotations") or {}
    assert annotations.get(PREBUILT_WORKLOAD_ANNOTATION), annotations
    assert (copy["metadata"].get("labels") or {}).get(ORIGIN_LABEL), copy["metadata"].get("labels")
    assert "managedBy" not in copy["spec"]["runPolicy"], "the copy is our operator's to run"
    assert not copy["spec"]["runPolicy"].get("suspend"), "admitted by the worker's Kueue"
    for pod in Job(worker.cluster, NAMESPACE, name).pods("worker"):
        owners = [ref["uid"] for ref in pod["metadata"]["ownerReferences"]]
        assert owners == [copy["metadata"]["uid"]], "the worker's pods are the copy's, made by our operator"
    print(_listing(manager, worker, f"{name} running on the worker"))

    succeeded = original.wait_condition("Succeeded", timeout=TIMEOUT)
    status = (original.get() or {})["status"]
    print(_listing(manager, worker, f"{name} Succeeded on the manager"))
    # Written by our operator on the worker and copied back by MultiKueue: nothing on the manager
    # writes an MPIJob's status, as its own operator skips the job.
    assert succeeded["reason"] == "MPIJobSucceeded"
    assert status["replicaStatuses"]["Launcher"].get("succeeded") == 1
    assert status.get("completionTime")
    body = original.get() or {}
    assert body["spec"]["runPolicy"].get("suspend") is False, "the manager's Kueue admitted it too"
    _assert_left_alone_by_a_syncing_operator(manager, name)

    # Once the manager's Workload is finished, MultiKueue removes the worker's copies.
    _wait_cleaned(worker, name)

    manager.cluster.rest.delete(original.path)
    _wait_cleaned(manager, name)
    assert _left_over(worker.cluster, name) == []
    print(_listing(manager, worker, f"{name} deleted on the manager"))


def test_deleting_a_running_job_on_the_manager_cleans_both_clusters(sides: tuple[Side, Side]) -> None:
    manager, worker = sides
    name = "pi-dropped"
    original = Job(manager.cluster, NAMESPACE, name).submit(_remote_job(name, runs_for="600s"))
    _wait_running_on_worker(worker, name)
    # The status comes back while the job runs, not only at its end.
    original.wait_condition("Running", timeout=TIMEOUT)
    _assert_left_alone_by_a_syncing_operator(manager, name)
    # ... but only the fields of upstream's API: Kueue copies it through upstream's Go types, which drop
    # our status extensions (docs/extensions.md): the manager's job shows none of them.
    wait_for(
        lambda: (Job(worker.cluster, NAMESPACE, name).get() or {}).get("status") or {},
        timeout=TIMEOUT,
        what=f"the copy of {name} with our status extensions",
        done=lambda status: status.get("phase") == "Running" and all(map(status.get, EXTENSIONS)),
    )
    status = (original.get() or {})["status"]
    assert status["replicaStatuses"] and not set(EXTENSIONS) & set(status), status
    # Conditions come back whatever their type: a list of upstream's condition struct.
    wait_for(
        lambda: [_condition_types(job) for job in (original, Job(worker.cluster, NAMESPACE, name))],
        timeout=TIMEOUT,
        what=f"the same conditions on both copies of {name}",
        done=lambda both: both[0] == both[1],
    )

    manager.cluster.rest.delete(original.path)
    for side in (manager, worker):
        _wait_cleaned(side, name)
    print(_listing(manager, worker, f"{name} deleted while running"))
