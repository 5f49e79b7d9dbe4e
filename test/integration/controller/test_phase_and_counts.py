"""`status.phase` with its printer column, pod counts per replica type and a short list of unhealthy pods
(issue 17, part 6): new status fields our CRD declares; upstream's fields and conditions are untouched."""

from __future__ import annotations

from mpioperator.testing.mpijobs import mpijob
from test.integration.controller.actors import Actors
from test.integration.controller.conftest import Harness
from test.integration.controller.kubelet import container, pod_status, write_pod_status


def _phase_column(a: Actors, job: str) -> str:
    """The PHASE column of `kubectl get mpijobs`, as a user reads it."""
    out = a.cluster.kubectl("-n", a.ns, "get", "mpijob", job).stdout.splitlines()
    header, row = out[0].split(), out[1].split()
    assert "PHASE" in header, out
    return row[header.index("PHASE")]


async def test_kubectl_get_shows_the_phase_from_pending_through_running_to_succeeded(
    harness: Harness,
) -> None:
    a = Actors(harness.cluster, harness.namespace)
    a.submit(mpijob("life", workers=2, run_policy={"cleanPodPolicy": "Running"}))
    await a.until(lambda: a.launcher_job("life"), "the launcher Job")
    await a.until_true(lambda: _phase_column(a, "life") == "Pending", "Pending")

    a.set_workers("life", "Running", ready=True)
    a.create_launcher_pod("life")
    await a.until_true(lambda: _phase_column(a, "life") == "Running", "Running")

    a.set_launcher_job("life", "Complete")
    await a.until_true(lambda: _phase_column(a, "life") == "Succeeded", "Succeeded")


async def test_a_suspended_job_is_in_phase_suspended(harness: Harness) -> None:
    a = Actors(harness.cluster, harness.namespace)
    a.submit(mpijob("nap", workers=1, run_policy={"suspend": True}))
    await a.until_true(lambda: a.status("nap").get("phase") == "Suspended", "phase Suspended")


async def test_pods_are_counted_per_replica_type_with_their_restarts(harness: Harness) -> None:
    a = Actors(harness.cluster, harness.namespace)
    a.submit(mpijob("count", workers=3))
    await a.until(lambda: a.launcher_job("count"), "the launcher Job")
    write_pod_status(a, "count-worker-1", pod_status("Running", container("worker", restarts=1)))
    write_pod_status(
        a, "count-worker-2", pod_status("Running", container("worker", ready=True, restarts=2), ready=True)
    )
    a.create_launcher_pod("count", phase="Pending")

    await a.until_true(
        lambda: (
            a.status("count").get("podCounts")
            == {
                "Launcher": {"pending": 1},
                "Worker": {"pending": 1, "running": 2, "ready": 1, "restarts": 3},
            }
        ),
        "the counts",
    )
    # Upstream's own counts are as they were.
    assert a.status("count")["replicaStatuses"] == {"Launcher": {}, "Worker": {"active": 2}}


async def test_unhealthy_pods_are_listed_with_reason_and_restarts_at_most_ten(harness: Harness) -> None:
    a = Actors(harness.cluster, harness.namespace)
    await a.submitted_with_workers(mpijob("many", workers=12))
    crash = "back-off 5m0s restarting failed container"
    for i in range(12):
        write_pod_status(
            a,
            f"many-worker-{i}",
            pod_status("Running", container("worker", waiting=("CrashLoopBackOff", crash), restarts=i)),
        )

    await a.until_true(
        lambda: a.status("many").get("podCounts", {}).get("Worker", {}).get("restarts") == sum(range(12)),
        "every worker's restarts counted",
    )
    # The first ten by replica type and index, each with what a user needs to pick the one to look at.
    assert a.status("many")["unhealthyPods"] == [
        {"name": f"many-worker-{i}", "replicaType": "Worker", "reason": "CrashLoopBackOff", "restarts": i}
        for i in range(10)
    ]
