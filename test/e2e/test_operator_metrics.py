"""/metrics of a running operator: job counters move once per job, histograms fill, deleted jobs leave
no series behind."""

from __future__ import annotations

import datetime as dt
import functools
from typing import Any

from prometheus_client.parser import text_string_to_metric_families

from mpioperator.testing.cluster import LocalCluster
from mpioperator.testing.mpijobs import mpijob
from mpioperator.testing.operator import OperatorProcess
from mpioperator.testing.wait import wait_for


def samples(operator: OperatorProcess) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    found = {}
    for family in text_string_to_metric_families(operator.metrics()):
        for sample in family.samples:
            found[(sample.name, tuple(sorted(sample.labels.items())))] = sample.value
    return found


def value(operator: OperatorProcess, metric: str, **labels: str) -> float:
    return samples(operator).get((metric, tuple(sorted(labels.items()))), 0.0)


def test_counters_move_once_per_job_histograms_fill_and_deleted_jobs_leave_no_series(
    installed_cluster: LocalCluster, make_namespace: Any, operator: OperatorProcess
) -> None:
    ns = make_namespace(installed_cluster)
    created0 = value(operator, "mpi_operator_jobs_created_total")
    ok0 = value(operator, "mpi_operator_jobs_successful_total")
    failed0 = value(operator, "mpi_operator_jobs_failed_total")
    durations0 = value(operator, "mpi_operator_job_duration_seconds_count", namespace=ns, result="succeeded")
    base = f"/apis/kubeflow.org/v2beta1/namespaces/{ns}/mpijobs"
    for i in range(3):
        installed_cluster.rest.create(base, mpijob(f"m-{i}", workers=1, launcher_runs_for="1s"))
    installed_cluster.rest.create(
        base,
        mpijob(
            "m-bad", workers=1, launcher_runs_for="1s", launcher_exit_code=2, run_policy={"backoffLimit": 0}
        ),
    )
    wait_for(
        lambda: (
            value(operator, "mpi_operator_jobs_successful_total") - ok0,
            value(operator, "mpi_operator_jobs_failed_total") - failed0,
        ),
        timeout=180,
        what="3 successes and 1 failure counted",
        done=lambda v: v == (3.0, 1.0),
    )
    assert value(operator, "mpi_operator_jobs_created_total") - created0 == 4
    assert (
        value(operator, "mpi_operator_job_duration_seconds_count", namespace=ns, result="succeeded")
        - durations0
        == 3
    )
    assert value(operator, "mpi_operator_job_time_to_running_seconds_count", namespace=ns) >= 1
    assert value(operator, "mpi_operator_job_info", launcher="m-0-launcher", namespace=ns) == 1
    assert value(operator, "mpi_operator_is_leader") == 1
    assert value(operator, "workqueue_adds_total", name="MPIJob") > 0

    # Syncs of finished jobs must not count them again (D5 #8): touch one success and the failure, and
    # once a sync of each that began after the touch has ended, every counter is where it was.
    touched = dt.datetime.now(dt.UTC)
    for name in ("m-0", "m-bad"):
        installed_cluster.rest.merge_patch(f"{base}/{name}", {"metadata": {"labels": {"touched": "yes"}}})
    for key in (f"{ns}/m-0", f"{ns}/m-bad"):
        wait_for(
            functools.partial(operator.syncs_started_after, key, touched),
            timeout=120,
            what=f"a sync of the finished {key} after the touch",
        )
    assert value(operator, "mpi_operator_jobs_successful_total") - ok0 == 3
    assert value(operator, "mpi_operator_jobs_failed_total") - failed0 == 1
    assert value(operator, "mpi_operator_jobs_created_total") - created0 == 4

    for i in range(3):
        installed_cluster.rest.delete(f"{base}/m-{i}")
    wait_for(
        lambda: [
            k for k in samples(operator) if k[0] == "mpi_operator_job_info" and ("namespace", ns) in k[1]
        ],
        timeout=60,
        what="job_info series of deleted jobs removed",
        done=lambda left: [k for k in left if ("launcher", "m-bad-launcher") not in k[1]] == [],
    )

    # With the namespace's last job gone, none of its series is left (its duration histograms included).
    installed_cluster.rest.delete(f"{base}/m-bad")
    wait_for(
        lambda: sorted({k[0] for k in samples(operator) if ("namespace", ns) in k[1]}),
        timeout=60,
        what="every series of the emptied namespace removed",
        done=lambda left: left == [],
    )
