"""A burst of MPIJobs all finish, and the operator logs no error while handling them."""

from __future__ import annotations

import json
import time
from typing import Any

from mpioperator.testing.cluster import LocalCluster
from mpioperator.testing.mpijobs import mpijob
from mpioperator.testing.operator import OperatorProcess
from mpioperator.testing.wait import wait_for

JOBS = 100
WORKERS = 4


def _succeeded(cluster: LocalCluster, ns: str) -> int:
    items: list[dict[str, Any]] = cluster.rest.get(f"/apis/kubeflow.org/v2beta1/namespaces/{ns}/mpijobs")[
        "items"
    ]
    return sum(
        1
        for job in items
        if any(
            c["type"] == "Succeeded" and c["status"] == "True"
            for c in (job.get("status") or {}).get("conditions") or ()
        )
    )


def _error_lines(log_text: str) -> list[str]:
    bad = []
    for line in log_text.splitlines():
        try:
            record = json.loads(line)
        except ValueError:
            continue
        if (
            record.get("level") in ("error", "critical", "exception")
            or record.get("event") == "error syncing"
        ):
            bad.append(line)
    return bad


def test_hundred_jobs_with_four_workers_all_succeed_without_operator_errors(
    installed_cluster: LocalCluster, make_namespace: Any, operator: OperatorProcess
) -> None:
    ns = make_namespace(installed_cluster)
    log_before = len(operator.log_text().splitlines())
    cpu_before = operator.cpu_seconds()
    started = time.monotonic()
    for i in range(JOBS):
        installed_cluster.rest.create(
            f"/apis/kubeflow.org/v2beta1/namespaces/{ns}/mpijobs",
            mpijob(f"burst-{i:03d}", workers=WORKERS, launcher_runs_for="1s"),
        )
    wait_for(
        lambda: _succeeded(installed_cluster, ns),
        timeout=900,
        interval=1.0,
        what=f"{JOBS} MPIJobs Succeeded",
        done=lambda n: n == JOBS,
    )
    wall = time.monotonic() - started
    cpu = operator.cpu_seconds() - cpu_before
    print(f"\n{JOBS} MPIJobs x {WORKERS} workers: all Succeeded in {wall:.1f}s wall, operator CPU {cpu:.1f}s")
    new_lines = "\n".join(operator.log_text().splitlines()[log_before:])
    assert _error_lines(new_lines) == []
