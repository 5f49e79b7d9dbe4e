"""Two operator replicas behind the Lease: one reconciles; a dead or stopped leader is replaced."""

from __future__ import annotations

import threading
import time
from collections import Counter
from collections.abc import Iterator
from typing import Any

import pytest

from mpioperator.testing.cluster import LocalCluster
from mpioperator.testing.install import OPERATOR_NAMESPACE
from mpioperator.testing.mpijobs import mpijob
from mpioperator.testing.operator import OperatorProcess
from mpioperator.testing.wait import wait_for

LEASE = f"/apis/coordination.k8s.io/v1/namespaces/{OPERATOR_NAMESPACE}/leases/mpi-operator"


def holder(cluster: LocalCluster) -> str:
    try:
        return str(cluster.rest.get(LEASE)["spec"].get("holderIdentity") or "")
    except Exception:
        return ""


@pytest.fixture
def pair(
    installed_cluster: LocalCluster, tmp_path: Any, operator: OperatorProcess
) -> Iterator[list[OperatorProcess]]:
    """Two fresh replicas; the session's operator is stopped first so these two compete alone."""
    operator.terminate()
    wait_for(
        lambda: holder(installed_cluster) == "", timeout=30, what="the session operator to release the lease"
    )
    replicas = [
        OperatorProcess(
            installed_cluster,
            name=f"replica-{i}",
            args=(
                f"--lock-namespace={OPERATOR_NAMESPACE}",
                "--threadiness=4",
                "--kube-api-qps=100",
                "--kube-api-burst=200",
            ),
            workdir=tmp_path / f"replica-{i}",
        ).start()
        for i in range(2)
    ]
    try:
        yield replicas
    finally:
        for replica in replicas:
            replica.terminate()
        operator.start()
        operator.wait_ready(timeout=90)


def leader_of(replicas: list[OperatorProcess]) -> OperatorProcess:
    return wait_for(
        lambda: [r for r in replicas if r.running and r.leading()],
        timeout=60,
        what="a ready leader",
        done=lambda ready: len(ready) == 1,
    )[0]


def children_report(cluster: LocalCluster, ns: str) -> dict[str, Any]:
    jobs = {
        j["metadata"]["uid"]: j
        for j in cluster.rest.get(f"/apis/kubeflow.org/v2beta1/namespaces/{ns}/mpijobs")["items"]
    }
    counts: Counter[tuple[str, str]] = Counter()
    orphans: list[str] = []
    for root, plural in (
        ("/api/v1", "services"),
        ("/api/v1", "configmaps"),
        ("/api/v1", "secrets"),
        ("/apis/batch/v1", "jobs"),
        ("/api/v1", "pods"),
    ):
        for item in cluster.rest.get(f"{root}/namespaces/{ns}/{plural}")["items"]:
            refs = [r for r in item["metadata"].get("ownerReferences") or () if r.get("controller")]
            if plural == "pods" and refs and refs[0]["kind"] == "Job":
                continue  # launcher pods belong to the Job controller
            if not refs or refs[0]["uid"] not in jobs:
                if item["metadata"]["name"] != "kube-root-ca.crt":
                    orphans.append(f"{plural}/{item['metadata']['name']}")
                continue
            counts[(plural, refs[0]["uid"])] += 1
    return {"jobs": jobs, "counts": counts, "orphans": orphans}


def test_exactly_one_replica_reconciles(
    installed_cluster: LocalCluster, pair: list[OperatorProcess], make_namespace: Any
) -> None:
    leader = leader_of(pair)
    follower = next(r for r in pair if r is not leader)
    assert holder(installed_cluster) != ""
    ns = make_namespace(installed_cluster)
    installed_cluster.rest.create(
        f"/apis/kubeflow.org/v2beta1/namespaces/{ns}/mpijobs",
        mpijob("one", workers=1, launcher_runs_for="1s"),
    )
    wait_for(
        lambda: any(
            c["type"] == "Succeeded"
            for c in (
                installed_cluster.rest.get(f"/apis/kubeflow.org/v2beta1/namespaces/{ns}/mpijobs/one").get(
                    "status"
                )
                or {}
            ).get("conditions")
            or ()
        ),
        timeout=120,
        what="the job to succeed",
    )
    assert not follower.leading()
    assert follower.ready(), "a standby reports ready: it can take over"
    assert '"synced"' not in follower.log_text() and "caches synced" not in follower.log_text()
    assert "caches synced" in leader.log_text()


def test_killed_leader_is_replaced_and_fifty_running_jobs_finish_without_duplicates(
    installed_cluster: LocalCluster, pair: list[OperatorProcess], make_namespace: Any
) -> None:
    leader = leader_of(pair)
    follower = next(r for r in pair if r is not leader)
    ns = make_namespace(installed_cluster)
    for i in range(50):
        installed_cluster.rest.create(
            f"/apis/kubeflow.org/v2beta1/namespaces/{ns}/mpijobs",
            mpijob(f"ha-{i:02d}", workers=2, launcher_runs_for="15s"),
        )
    wait_for(
        lambda: len(installed_cluster.rest.get(f"/apis/batch/v1/namespaces/{ns}/jobs")["items"]),
        timeout=120,
        what="some launchers running",
        done=lambda n: n >= 10,
    )
    killed_at = time.monotonic()
    leader.kill()
    wait_for(follower.leading, timeout=40, what="the follower to take over")
    takeover = time.monotonic() - killed_at
    print(f"\nleader SIGKILLed; follower ready after {takeover:.1f}s")
    assert takeover < 20.0 + 5.0  # lease duration 15 s plus a retry period, with slack for a loaded machine

    def succeeded() -> int:
        return sum(
            1
            for job in installed_cluster.rest.get(f"/apis/kubeflow.org/v2beta1/namespaces/{ns}/mpijobs")[
                "items"
            ]
            if any(
                c["type"] == "Succeeded" and c["status"] == "True"
                for c in (job.get("status") or {}).get("conditions") or ()
            )
        )

    wait_for(succeeded, timeout=300, interval=1.0, what="50 jobs Succeeded", done=lambda n: n == 50)
    report = children_report(installed_cluster, ns)
    assert report["orphans"] == []
    for uid in report["jobs"]:
        for plural in ("services", "configmaps", "secrets", "jobs"):
            assert report["counts"][(plural, uid)] == 1, (plural, report["jobs"][uid]["metadata"]["name"])


def test_sigterm_releases_the_lease_and_the_follower_takes_over(
    installed_cluster: LocalCluster, pair: list[OperatorProcess]
) -> None:
    leader = leader_of(pair)
    follower = next(r for r in pair if r is not leader)
    held_by = holder(installed_cluster)
    released_after: list[float] = []

    def watch_lease() -> None:
        # Polled beside the blocking terminate() to split the handover into its parts for the report.
        while time.monotonic() - stopped_at < 15 and holder(installed_cluster) == held_by:
            time.sleep(0.02)
        released_after.append(time.monotonic() - stopped_at)

    stopped_at = time.monotonic()
    poller = threading.Thread(target=watch_lease, daemon=True)
    poller.start()
    code = leader.terminate(timeout=15)
    exited_after = time.monotonic() - stopped_at
    assert code == 0
    wait_for(follower.leading, timeout=15, interval=0.05, what="the follower to lead")
    handover = time.monotonic() - stopped_at
    poller.join()
    print(
        f"\nSIGTERM handover: {handover:.2f}s (lease left the old leader at {released_after[0]:.2f}s, "
        f"old leader exited at {exited_after:.2f}s, exit code {code})"
    )
    # Without a release the follower could only take an expired lease (15 s); a quicker takeover
    # is the observable proof that the stopping leader gave it up.
    assert handover < 10.0
