"""The dashboard and the alert rules against a real Prometheus scraping real operators.

Two operator replicas (a leader and a standby, as the Deployment runs them) on their own full local cluster,
scraped every second by Prometheus built from its Go module; the rule file is the PrometheusRule's spec.
Jobs succeed, fail, wait to run and cannot be synced (a child's name is taken); then the leader is SIGKILLed, the standby takes
over, and finally no replica is left. Every dashboard expression and every alert expression must parse and
return data, and each alert's condition is met for real while the test watches.

With MPIOPERATOR_DASHBOARD_PNG=<path> (hack/dashboard-screenshot.sh) the run also draws the dashboard's
panels from this Prometheus into that PNG (docs/observe.md shows it).
"""

from __future__ import annotations

import os
import re
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from mpioperator.testing.cluster import LocalCluster
from mpioperator.testing.dashboard import load_panels, render
from mpioperator.testing.install import OPERATOR_NAMESPACE, install_manifests, lease_holder
from mpioperator.testing.jobs import Job
from mpioperator.testing.mpijobs import mpijob
from mpioperator.testing.operator import OperatorProcess
from mpioperator.testing.prometheus import (
    LocalPrometheus,
    PromQLError,
    alert_rules,
    check_rules,
    find_prometheus,
    write_rule_file,
)
from mpioperator.testing.simulation import READY_AFTER
from mpioperator.testing.wait import wait_for
from test.conftest import _start

pytestmark = pytest.mark.timeout(900)

SCREENSHOT_ENV = "MPIOPERATOR_DASHBOARD_PNG"
# The leader writes this into the Lease, so after a SIGKILL the standby waits this long before taking
# over: a window in which replicas are up and none leads.
LEADER_LEASE = ("--leader-elect-lease-duration=40", "--leader-elect-renew-deadline=20")


def alerts_by_name() -> dict[str, dict[str, Any]]:
    return {
        rule["alert"]: rule for group in alert_rules()["groups"] for rule in group["rules"] if "alert" in rule
    }


def with_threshold(expr: str, threshold: float) -> str:
    """The alert's expression with its final `> N` replaced: for a condition that takes longer to reach
    (15 minutes of waiting) than a test should. The rest of the expression is evaluated as written."""
    replaced, count = re.subn(r">\s*[0-9.]+\s*$", f"> {threshold}", expr.strip())
    assert count == 1, f"no trailing '> N' threshold in {expr!r}"
    return replaced


@pytest.fixture(scope="module")
def observed_cluster() -> Iterator[LocalCluster]:
    """A cluster of its own: this test kills its operators, which must not be another test's."""
    cluster = _start(LocalCluster("full", nodes=3))
    install_manifests(cluster)
    yield cluster
    cluster.stop()


def start_operator(cluster: LocalCluster, workdir: Path, name: str) -> OperatorProcess:
    proc = OperatorProcess(
        cluster,
        name=name,
        args=(f"--lock-namespace={OPERATOR_NAMESPACE}", *LEADER_LEASE),
        workdir=workdir,
    )
    return proc.start()


def returns_nothing(prometheus: LocalPrometheus, exprs: list[str]) -> list[str]:
    """The expressions whose instant query returns no sample (a parse error fails the test at once)."""
    empty = []
    for expr in exprs:
        try:
            if not prometheus.query(expr):
                empty.append(expr)
        except PromQLError as exc:
            pytest.fail(f"Prometheus refused {expr!r}: {exc}")
    return empty


def alert_value(prometheus: LocalPrometheus, rule: dict[str, Any], *, timeout: float) -> float:
    """The value of the alert `rule`'s expression, once it returns data (waited for up to `timeout`)."""
    found = wait_for(
        lambda: prometheus.query(rule["expr"]),
        timeout=timeout,
        what=f"{rule['alert']}'s expression to return data",
    )
    return float(found[0]["value"][1])


def submit_workload(cluster: LocalCluster, ns: str, blocked_ns: str, wave: int) -> None:
    base = f"/apis/kubeflow.org/v2beta1/namespaces/{ns}/mpijobs"
    for i in range(3):
        cluster.rest.create(base, mpijob(f"ok-{wave}-{i}", workers=1, launcher_runs_for=f"{5 + 5 * i}s"))
    cluster.rest.create(
        base,
        mpijob(
            f"bad-{wave}",
            workers=1,
            launcher_runs_for="3s",
            launcher_exit_code=2,
            run_policy={"backoffLimit": 0},
        ),
    )
    if wave == 0:
        # Its workers are bound but never Ready, and its launcher waits for them: the job waits to run for
        # as long as the test lasts.
        waits = mpijob(
            "waits",
            workers=2,
            worker_annotations={READY_AFTER: "2h"},
            spec={"launcherCreationPolicy": "WaitForWorkersReady"},
        )
        cluster.rest.create(base, waits)
        # Its ConfigMap's name is taken by an object the operator does not own, so every sync of it fails.
        blocked = f"/apis/kubeflow.org/v2beta1/namespaces/{blocked_ns}/mpijobs"
        cluster.rest.create(blocked, mpijob("refused", workers=1))


def test_dashboard_and_alert_expressions_return_data_from_real_operators(
    observed_cluster: LocalCluster, make_namespace: Any, tmp_path: Path
) -> None:
    cluster = observed_cluster
    binary = find_prometheus()
    rule_file = write_rule_file(tmp_path / "alerts.yaml", alert_rules())
    checked = check_rules(binary, rule_file)
    assert checked.returncode == 0 and "SUCCESS: 4 rules found" in checked.stdout, (
        checked.stdout + checked.stderr
    )

    leader = start_operator(cluster, tmp_path / "a", "operator-a")
    leader.wait_ready(timeout=90)
    standby = start_operator(cluster, tmp_path / "b", "operator-b")
    prometheus = LocalPrometheus(
        {"mpi-operator": [f"127.0.0.1:{leader.metrics_port}", f"127.0.0.1:{standby.metrics_port}"]},
        rule_files=[rule_file],
        work_dir=tmp_path / "prometheus",
        binary=binary,
    ).start()
    started = time.time()
    try:
        wait_for(
            lambda: set(prometheus.target_health().values()),
            timeout=30,
            what="both replicas scraped",
            done=lambda health: health == {"up"},
        )
        ns = make_namespace(cluster)
        blocked_ns = make_namespace(cluster)
        # A ConfigMap of the name `refused`'s would get, made by someone else: every sync of that job fails
        # ("already exists and is not managed") and is retried with back-off. (A quota's 403 no longer
        # counts: the operator holds such a job with a condition instead of retrying it, decisions L11.)
        cluster.rest.create(
            f"/api/v1/namespaces/{blocked_ns}/configmaps",
            {"metadata": {"name": "refused-config"}, "data": {"hostfile": "not the operator's\n"}},
        )
        submit_workload(cluster, ns, blocked_ns, wave=0)
        for i in range(3):
            Job(cluster, ns, f"ok-0-{i}").wait_condition("Succeeded", timeout=180)
        Job(cluster, ns, "bad-0").wait_condition("Failed", timeout=180)
        submit_workload(cluster, ns, blocked_ns, wave=1)

        # Every panel's every query returns data (Prometheus parses it, the series exist and have moved).
        exprs = [target.expr for panel in load_panels() for target in panel.targets]
        assert len(exprs) >= 20
        wait_for(
            lambda: returns_nothing(prometheus, exprs),
            timeout=180,
            what="every dashboard expression to return data",
            done=lambda empty: empty == [],
        )

        rules = alerts_by_name()
        assert set(rules) == {
            "MPIOperatorDown",
            "MPIOperatorNoLeader",
            "MPIOperatorReconcileErrors",
            "MPIJobPendingTooLong",
        }
        # Prometheus itself evaluates every rule against these series without an error.
        wait_for(
            lambda: [
                (rule["name"], rule.get("health"), rule.get("lastError"))
                for group in prometheus.rule_groups()
                for rule in group["rules"]
                if rule.get("health") != "ok"
            ],
            timeout=30,
            what="every rule evaluated with health ok",
            done=lambda bad: bad == [],
        )
        # Healthy and leading: the operator alerts are quiet.
        assert prometheus.query(rules["MPIOperatorDown"]["expr"]) == []
        assert prometheus.query(rules["MPIOperatorNoLeader"]["expr"]) == []

        # Every sync of `refused` fails on its ConfigMap: more than 5% of syncs fail.
        assert alert_value(prometheus, rules["MPIOperatorReconcileErrors"], timeout=120) > 0.05

        # Neither `waits` nor `refused` has run since it started: the signal counts their wait, the alert
        # fires past 15 minutes (promtool's rule tests check that threshold); here it is lowered to what
        # has passed, and the jobs that ran are not counted.
        pending_expr = rules["MPIJobPendingTooLong"]["expr"]
        wait_for(
            lambda: {
                s["metric"].get("namespace") for s in prometheus.query(with_threshold(pending_expr, 20))
            },
            timeout=120,
            what="MPIJobPendingTooLong's expression (threshold 20 s) to return both namespaces",
            done=lambda namespaces: namespaces == {ns, blocked_ns},
        )

        # SIGKILL the leader: the standby is up but waits out the Lease it cannot see renewed.
        assert leader.leading() and not standby.leading()
        leader.kill()
        assert alert_value(prometheus, rules["MPIOperatorNoLeader"], timeout=30) == 0
        assert prometheus.query(rules["MPIOperatorDown"]["expr"]) == []  # the standby is still up
        standby.wait_ready(timeout=90)
        assert lease_holder(cluster, OPERATOR_NAMESPACE) is not None
        wait_for(
            lambda: prometheus.query(rules["MPIOperatorNoLeader"]["expr"]),
            timeout=30,
            what="MPIOperatorNoLeader quiet again after the takeover",
            done=lambda result: result == [],
        )
        # The new leader finishes the jobs submitted before the takeover and runs a new wave; its
        # state gauge (read from its own caches) counts every one of them.
        submit_workload(cluster, ns, blocked_ns, wave=2)
        for wave in (1, 2):
            for i in range(3):
                Job(cluster, ns, f"ok-{wave}-{i}").wait_condition("Succeeded", timeout=180)
        succeeded = f'sum(mpi_operator_jobs{{job="mpi-operator",namespace="{ns}",state="Succeeded"}})'
        wait_for(
            lambda: [float(s["value"][1]) for s in prometheus.query(succeeded)],
            timeout=60,
            what="the new leader's mpi_operator_jobs to count 9 Succeeded jobs",
            done=lambda values: values == [9.0],
        )

        screenshot = os.environ.get(SCREENSHOT_ENV)
        if screenshot:
            drawn = render(
                prometheus,
                load_panels(),
                start=started,
                end=time.time(),
                out=Path(screenshot),
                title="MPI Operator (rendered from a real Prometheus during test_observability.py)",
            )
            assert all(drawn.values()), drawn

        # No replica left: nothing reconciles, which is what MPIOperatorDown says.
        standby.terminate()
        assert alert_value(prometheus, rules["MPIOperatorDown"], timeout=30) == 1
    finally:
        prometheus.stop()
        standby.terminate()
        leader.terminate()
