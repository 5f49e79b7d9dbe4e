"""The benchmark's arithmetic: audit lines counted per user, percentiles, ratios judged against targets."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

import pytest

from mpioperator.testing.audit import (
    AUDIT_LOG_MAX_MB,
    WritesTail,
    apiserver_audit_args,
    count_writes,
    minimum_writes_per_job,
    read_writes,
)
from test.benchmarks import contenders
from test.benchmarks.report import KIB, MIB, Figures, Metric, Row, format_table, rows, scale_metrics, spread
from test.benchmarks.scenarios import percentile

OPERATOR = "system:serviceaccount:mpi-operator:mpi-operator"


def audit_line(verb: str, resource: str, *, user: str = OPERATOR, code: int = 201, **extra: str) -> str:
    event = {
        "stage": extra.get("stage", "ResponseComplete"),
        "verb": verb,
        "user": {"username": user},
        "objectRef": {"resource": resource, **({"subresource": extra["sub"]} if "sub" in extra else {})},
        "responseStatus": {"code": code},
    }
    return json.dumps(event)


def test_writes_are_counted_by_verb_and_resource_for_one_user_only() -> None:
    lines = [
        audit_line("create", "pods"),
        audit_line("create", "pods"),
        audit_line("update", "mpijobs", sub="status"),
        audit_line("update", "mpijobs", sub="status", code=409),
        audit_line("create", "pods", user="system:kube-scheduler"),
        audit_line("get", "pods"),
        audit_line("create", "pods", stage="RequestReceived"),
    ]
    writes = count_writes(lines, OPERATOR)
    assert dict(writes.by_kind) == {("create", "pods"): 2, ("update", "mpijobs/status"): 2}
    assert dict(writes.failed) == {("update", "mpijobs/status"): 1}
    assert writes.total() == 4
    assert writes.total(excluding=("pods",)) == 2


def test_writes_of_a_later_reading_minus_an_earlier_one_are_the_new_writes() -> None:
    before = count_writes([audit_line("update", "leases")], OPERATOR)
    after = count_writes([audit_line("update", "leases"), audit_line("create", "services")], OPERATOR)
    assert dict(after.minus(before).by_kind) == {("create", "services"): 1}


def test_minimum_writes_for_eight_workers() -> None:
    # 12 creates, 1 ConfigMap update, 3 status writes, 3 events, 8 worker deletes.
    assert minimum_writes_per_job(8) == 27


@pytest.mark.parametrize(("q", "expected"), [(50, 50.0), (99, 99.0), (100, 100.0), (1, 1.0)])
def test_nearest_rank_percentile_of_one_to_a_hundred(q: float, expected: float) -> None:
    assert percentile([float(v) for v in range(100, 0, -1)], q) == expected


def test_p99_of_few_samples_is_their_maximum() -> None:
    assert percentile([3.0, 1.0, 2.0], 99) == 3.0


def metric(higher: bool, target: float | None) -> Metric:
    return Metric("m", "s", lambda f: f["v"], higher, target)


def test_ratio_is_ours_over_upstream_and_is_judged_in_the_metrics_direction() -> None:
    assert Row(metric(True, 1.0), ours=12.0, upstream=10.0).verdict == ">= 1.0x met"
    assert Row(metric(True, 1.0), ours=9.0, upstream=10.0).verdict == ">= 1.0x MISSED"
    assert Row(metric(False, 1.5), ours=14.0, upstream=10.0).verdict == "<= 1.5x met"
    assert Row(metric(False, 1.5), ours=16.0, upstream=10.0).verdict == "<= 1.5x MISSED"
    assert Row(metric(False, None), ours=16.0, upstream=10.0).verdict == ""


def test_table_aligns_columns_and_marks_unmeasured_figures() -> None:
    table = format_table([Row(metric(True, 1.0), 2.0, 1.0), Row(metric(False, None), float("nan"), 3.0)])
    lines = table.splitlines()
    assert lines[0].split() == ["metric", "unit", "mpioperator", "upstream", "ratio", "target"]
    assert lines[2].split()[-4:] == ["2.00x", ">=", "1.0x", "met"]
    assert lines[3].split()[2] == "-"
    assert len({len(line) for line in lines[:3]}) == 1


def test_a_contender_cut_off_before_finishing_is_shown_as_a_bound() -> None:
    row = Row(metric(True, 1.0), ours=3.0, upstream=0.5, ours_capped=False, upstream_capped=True)
    assert row.ratio_text == ">6.00x"
    assert row.verdict == ">= 1.0x met"
    lines = format_table([row]).splitlines()
    assert lines[2].split()[2:4] == ["3.00", "<0.50"]


def test_no_verdict_when_ours_was_cut_off() -> None:
    row = Row(metric(True, 1.0), ours=0.5, upstream=3.0, ours_capped=True, upstream_capped=False)
    assert row.ratio_text == "n/a"
    assert row.verdict == ""


def test_a_cost_of_work_upstream_did_not_finish_is_not_compared() -> None:
    row = Row(metric(False, 1.0), ours=27.0, upstream=15.0, ours_capped=False, upstream_capped=True)
    assert row.ratio_text == "n/a"
    assert row.verdict == ""
    # The whole lifecycle would have cost at least what the unfinished part did.
    assert format_table([row]).splitlines()[2].split()[2:5] == ["27.00", ">15.00", "n/a"]


PACED = ("writes per MPIJob, paced", "CPU per MPIJob, paced")


def _paced_rows(ours: dict[str, float], upstream: dict[str, float]) -> dict[str, Row]:
    """The table's two paced rows, by label. Both must be there: the tests that loop over them would
    check nothing if the table had lost them."""
    table = rows([ours], [upstream], jobs=200, workers=8)
    paced = {r.metric.label: r for r in table if "paced" in r.metric.label}
    assert sorted(paced) == sorted(PACED), [r.metric.label for r in table]
    return paced


def test_paced_costs_are_per_job_and_carry_the_targets() -> None:
    ours = {"paced_jobs": 20.0, "paced_succeeded": 20.0, "paced_writes": 540.0, "paced_cpu_s": 1.2}
    upstream = {"paced_jobs": 20.0, "paced_succeeded": 20.0, "paced_writes": 600.0, "paced_cpu_s": 0.6}
    paced = _paced_rows(ours, upstream)
    writes, cpu = paced["writes per MPIJob, paced"], paced["CPU per MPIJob, paced"]
    assert (writes.ours, writes.upstream) == (27.0, 30.0)
    assert writes.verdict == "<= 1.0x met"
    assert (cpu.ours, cpu.upstream) == (60.0, 30.0)
    assert cpu.verdict == "<= 1.0x MISSED"


def test_a_paced_run_that_did_not_finish_every_job_is_not_compared() -> None:
    ours = {"paced_jobs": 20.0, "paced_succeeded": 20.0, "paced_writes": 540.0, "paced_cpu_s": 1.2}
    upstream = {"paced_jobs": 20.0, "paced_succeeded": 12.0, "paced_writes": 300.0, "paced_cpu_s": 0.4}
    for row in _paced_rows(ours, upstream).values():
        assert row.upstream_capped
        assert row.verdict == ""


def test_a_paced_run_whose_workers_were_not_all_cleaned_up_is_not_compared() -> None:
    ours = {"paced_jobs": 20.0, "paced_succeeded": 20.0, "paced_writes": 540.0, "paced_cpu_s": 1.2}
    upstream = {
        "paced_jobs": 20.0,
        "paced_succeeded": 20.0,
        "paced_writes": 400.0,
        "paced_cpu_s": 0.5,
        "paced_workers_left": 37.0,
    }
    for row in _paced_rows(ours, upstream).values():
        assert row.upstream_capped
        assert row.verdict == ""


def test_runs_without_a_paced_scenario_show_its_rows_as_unmeasured() -> None:
    for row in _paced_rows({}, {}).values():
        assert row.ours != row.ours and not row.ours_capped


def test_audit_tail_counts_only_lines_appended_since_its_last_read_and_waits_for_a_line_to_end(
    tmp_path: Path,
) -> None:
    log = tmp_path / "audit.log"
    tail = WritesTail(log, OPERATOR)
    assert tail.read().total() == 0
    log.write_text(audit_line("create", "pods") + "\n" + audit_line("create", "services")[:20])
    assert dict(tail.read().by_kind) == {("create", "pods"): 1}
    with log.open("a") as f:
        f.write(audit_line("create", "services")[20:] + "\n" + audit_line("delete", "pods", code=404) + "\n")
    writes = tail.read()
    assert dict(writes.by_kind) == {("create", "pods"): 1, ("create", "services"): 1, ("delete", "pods"): 1}
    assert dict(writes.failed) == {("delete", "pods"): 1}
    assert writes == read_writes(log, OPERATOR)


def test_a_tail_whose_log_was_rotated_under_it_says_so_instead_of_parsing_half_a_line(tmp_path: Path) -> None:
    log = tmp_path / "audit.log"
    tail = WritesTail(log, OPERATOR)
    log.write_text(audit_line("create", "pods") + "\n" + audit_line("create", "services") + "\n")
    tail.read()
    log.write_text(audit_line("create", "jobs") + "\n")  # the API server began a new file

    with pytest.raises(RuntimeError, match="rotated"):
        tail.read()


def test_the_api_servers_audit_log_is_kept_as_one_file_at_any_size_a_run_reaches(tmp_path: Path) -> None:
    args, log = apiserver_audit_args(tmp_path, OPERATOR)
    # Its default bound is 100 MB, which 10,000 MPIJobs' writes passed.
    assert f"--audit-log-maxsize={AUDIT_LOG_MAX_MB}" in args and AUDIT_LOG_MAX_MB >= 100_000
    assert f"--audit-log-path={log}" in args


def test_paced_cpu_spread_is_each_rounds_ratio_around_their_median() -> None:
    cpu = metric(False, 1.0)
    ours = [{"v": 9.0}, {"v": 10.0}, {"v": 12.0}]
    upstream = [{"v": 10.0}, {"v": 10.0}, {"v": 10.0}]
    found = spread(cpu, ours, upstream)
    assert found is not None
    assert found.ratios == (0.9, 1.0, 1.2)
    assert found.median == 1.0
    assert (round(found.low, 3), round(found.high, 3)) == (-0.1, 0.2)
    assert not found.within(0.10)
    two_rounds = spread(cpu, ours[:2], upstream[:2])
    assert two_rounds is not None and two_rounds.within(0.10)


def scale_figures(
    *, base: float, rss: dict[str, float], cpu: dict[str, float], writes: dict[str, float]
) -> Figures:
    jobs = {"first": 1000.0, "restart": 1000.0, "rest": 3000.0}
    figures: Figures = {"scale_base_rss_b": base}
    for stage, n in jobs.items():
        figures |= {
            f"scale_{stage}_jobs": n,
            f"scale_{stage}_rss_b": rss.get(stage, 0.0),
            f"scale_{stage}_cpu_s": cpu[stage],
            f"scale_{stage}_writes": writes[stage],
        }
    return figures


def test_scale_growth_is_cost_per_job_added_and_memory_per_job_between_readings() -> None:
    figures = scale_figures(
        base=100 * MIB,
        rss={"first": 100 * MIB + 1000 * 50 * KIB, "rest": 100 * MIB + 1000 * 50 * KIB + 4000 * 40 * KIB},
        cpu={"first": 20.0, "restart": 30.0, "rest": 90.0},
        writes={"first": 13_000.0, "restart": 13_500.0, "rest": 40_500.0},
    )
    chosen = {m.label: m for m in scale_metrics((1000, 1000, 3000), 4)}
    values = {label: m.value(figures) for label, m in chosen.items() if "per job" in label}
    assert values["CPU per job, first 1,000"] == 20.0
    assert values["CPU per job, 1,000 to 5,000"] == 30.0
    assert values["writes per job, first 1,000"] == 13.0
    assert values["writes per job, 1,000 to 5,000"] == 13.5
    assert values["RSS per job, 0 to 1,000"] == 50.0
    assert values["RSS per job, 1,000 to 5,000"] == 40.0
    assert chosen["RSS with 5,000 jobs / 25,000 pods"].target == 0.5
    assert chosen["start-up to ready, 2,000 jobs / 10,000 pods (median)"].target == 1.0


def test_ready_is_timed_by_the_ready_lines_own_timestamp_in_either_log() -> None:
    ours_log = "\n".join(
        [
            '{"event": "became leader", "timestamp": "2026-11-24T06:15:26.859648Z"}',
            '{"workers": 8, "event": "caches synced; starting workers", "timestamp": "2026-11-24T06:15:28.122327Z"}',
        ]
    )
    assert contenders.ours_ready_at(ours_log) == pytest.approx(
        dt.datetime(2026, 11, 24, 6, 15, 28, 122327, tzinfo=dt.UTC).timestamp()
    )
    upstream_log = (
        "I1124 06:21:28.000001   27172 mpi_job_controller.go:480] Waiting for informer caches to sync\n"
        "I1124 06:21:28.882882   27172 mpi_job_controller.go:489] Starting workers\n"
    )
    assert contenders.klog_ready_at(upstream_log, year=2026) == pytest.approx(
        dt.datetime(2026, 11, 24, 6, 21, 28, 882882).timestamp()
    )
    with pytest.raises(ValueError, match="no ready line"):
        contenders.ours_ready_at(ours_log.splitlines()[0])


def test_two_contenders_on_one_cluster_are_compared_at_the_clusters_size_from_readings_started_on_it() -> (
    None
):
    figures = scale_figures(
        base=100 * MIB,
        rss={"first": 999 * MIB, "rest": 999 * MIB},
        cpu={"first": 20.0, "restart": 30.0, "rest": 90.0},
        writes={"first": 13_000.0, "restart": 13_500.0, "rest": 40_500.0},
    )
    # Both contenders' jobs are on the cluster: 2,000 after stage 1, 10,000 at the end.
    figures["scale_first_started_rss_b"] = 100 * MIB + 2000 * 50 * KIB
    figures["scale_rest_started_rss_b"] = 100 * MIB + 2000 * 50 * KIB + 8000 * 40 * KIB
    chosen = {m.label: m for m in scale_metrics((1000, 1000, 3000), 4, sharing=2)}
    values = {label: m.value(figures) for label, m in chosen.items() if "per job" in label}

    assert values["RSS per job on the cluster, 0 to 2,000"] == 50.0
    assert values["RSS per job on the cluster, 2,000 to 10,000"] == 40.0
    assert chosen["RSS started on 10,000 jobs / 50,000 pods"].target == 0.5
    assert chosen["start-up to ready, 4,000 jobs / 20,000 pods (median)"].target == 1.0
    assert "start-up to a new job's launcher, 10,000 jobs" in chosen
    # Growth costs stay per job the contender added itself.
    assert values["CPU per job added, stages 2-3 (4,000)"] == 30.0
    assert values["writes per job added, stage 1 (1,000)"] == 13.0


def test_results_from_clusters_of_their_own_keep_their_labels() -> None:
    labels = [m.label for m in scale_metrics((1000, 1000, 3000), 4)]
    assert "RSS with 5,000 jobs / 25,000 pods" in labels
    assert "start-up to ready, 2,000 jobs / 10,000 pods (median)" in labels
    assert not any("started on" in label for label in labels)
