"""The alert rules' thresholds and `for` durations, checked by the real promtool on synthetic series: each
alert fires when its condition has held long enough, not before, and not when the condition is absent.
(test/e2e/test_observability.py meets each condition for real against running operators.)"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from mpioperator.testing.prometheus import (
    alert_rules,
    check_rules,
    find_prometheus,
    run_rule_tests,
    write_rule_file,
)

JOB = 'job="mpi-operator"'


def expected_alert(alert: str, labels: dict[str, str], summary: str) -> dict[str, Any]:
    """A firing instance as promtool reports it: labels, and the annotations rendered for them."""
    (rule,) = [r for g in alert_rules()["groups"] for r in g["rules"] if r.get("alert") == alert]
    description = rule["annotations"]["description"].replace(
        "{{ $labels.namespace }}", labels.get("namespace", "")
    )
    return {"exp_labels": labels, "exp_annotations": {"summary": summary, "description": description}}


def alert_case(
    series: dict[str, str], alert: str, at: str, firing: tuple[dict[str, str], str] | None
) -> dict[str, Any]:
    """One promtool test: these input series (1-minute steps), and at `at` the alert firing once with
    these labels and summary, or not at all."""
    expected = [expected_alert(alert, *firing)] if firing else []
    return {
        "interval": "1m",
        "input_series": [{"series": name, "values": values} for name, values in series.items()],
        "alert_rule_test": [{"eval_time": at, "alertname": alert, "exp_alerts": expected}],
    }


def run_case(tmp_path: Path, case: dict[str, Any]) -> str:
    """Runs the case; returns promtool's complaint ('' when it passed)."""
    binary = find_prometheus()
    rules = write_rule_file(tmp_path / "alerts.yaml", alert_rules())
    spec = tmp_path / "alerts_test.yaml"
    spec.write_text(yaml.safe_dump({"rule_files": [rules.name], "tests": [case]}))
    result = run_rule_tests(binary, spec)
    return "" if result.returncode == 0 else result.stdout + result.stderr


def test_every_rule_parses_with_promtool(tmp_path: Path) -> None:
    result = check_rules(find_prometheus(), write_rule_file(tmp_path / "alerts.yaml", alert_rules()))
    assert result.returncode == 0, result.stdout + result.stderr
    assert "SUCCESS: 4 rules found" in result.stdout


CRITICAL = {"severity": "critical"}
WARNING = {"severity": "warning"}
DOWN = {f'up{{{JOB},instance="a"}}': "1 1 0x10"}
DOWN_SUMMARY = "No mpi-operator replica is up"
NO_LEADER = {
    f'mpi_operator_is_leader{{{JOB},instance="a"}}': "1 1 0x10",
    f'mpi_operator_is_leader{{{JOB},instance="b"}}': "0x12",
}
# 1 error per minute out of 10 syncs (10%), or 1 out of 50 (2%).
ERRORS_10PCT = {
    f"mpi_operator_reconcile_errors_total{{{JOB}}}": "0+1x40",
    f"mpi_operator_reconcile_duration_seconds_count{{{JOB}}}": "0+10x40",
}
ERRORS_2PCT = {
    f"mpi_operator_reconcile_errors_total{{{JOB}}}": "0+1x40",
    f"mpi_operator_reconcile_duration_seconds_count{{{JOB}}}": "0+50x40",
}
# A job in namespace a waiting since t=0, reported every minute.
PENDING = {f'mpi_operator_job_pending_oldest_seconds{{{JOB},namespace="a",instance="x"}}': "0+60x30"}


@pytest.mark.parametrize(
    ("series", "alert", "at", "firing"),
    [
        pytest.param(DOWN, "MPIOperatorDown", "6m", None, id="down-not-yet-5m"),
        pytest.param(DOWN, "MPIOperatorDown", "8m", (CRITICAL, DOWN_SUMMARY), id="down-fires-after-5m"),
        pytest.param(
            {'up{job="other"}': "1x10"},
            "MPIOperatorDown",
            "6m",
            (CRITICAL, DOWN_SUMMARY),
            id="down-when-never-scraped",
        ),
        pytest.param({f"up{{{JOB}}}": "1x10"}, "MPIOperatorDown", "8m", None, id="down-quiet-when-up"),
        pytest.param(NO_LEADER, "MPIOperatorNoLeader", "3m", None, id="no-leader-not-yet-2m"),
        pytest.param(
            NO_LEADER,
            "MPIOperatorNoLeader",
            "5m",
            (CRITICAL, "mpi-operator replicas are up but none leads"),
            id="no-leader-fires-after-2m",
        ),
        pytest.param(
            {f'mpi_operator_is_leader{{{JOB},instance="a"}}': "1x10"},
            "MPIOperatorNoLeader",
            "8m",
            None,
            id="no-leader-quiet-with-a-leader",
        ),
        pytest.param(ERRORS_10PCT, "MPIOperatorReconcileErrors", "12m", None, id="errors-not-yet-15m"),
        pytest.param(
            ERRORS_10PCT,
            "MPIOperatorReconcileErrors",
            "30m",
            (WARNING, "mpi-operator: 10% of reconciles fail"),
            id="errors-fire-above-5pct",
        ),
        pytest.param(ERRORS_2PCT, "MPIOperatorReconcileErrors", "30m", None, id="errors-quiet-below-5pct"),
        pytest.param(PENDING, "MPIJobPendingTooLong", "15m", None, id="pending-quiet-at-15m"),
        pytest.param(
            PENDING,
            "MPIJobPendingTooLong",
            "18m",
            ({**WARNING, "namespace": "a"}, "An MPIJob in a has waited 18m 0s to run"),
            id="pending-fires-past-15m",
        ),
    ],
)
def test_alert_fires_only_when_its_condition_held_long_enough(
    tmp_path: Path,
    series: dict[str, str],
    alert: str,
    at: str,
    firing: tuple[dict[str, str], str] | None,
) -> None:
    complaint = run_case(tmp_path, alert_case(series, alert, at, firing))
    assert complaint == "", complaint
