"""The start-up curve's own arithmetic: which jobs must list pod IPs, how each operator's rounds are
summed up per series, and earlier runs' figures read back and reported together."""

from __future__ import annotations

import json
from dataclasses import asdict
from pathlib import Path

from test.benchmarks.bench_startup_curve import (
    IP_HOSTFILE,
    Point,
    Shape,
    fits_by_name,
    read_points,
    series_names,
    table,
)
from test.benchmarks.contenders import Ours, Settings, Upstream

REPO = Path(__file__).resolve().parents[3]


def point(contender: str, workers: int, seconds: float, **extra: object) -> Point:
    return Point(contender, workers, seconds, seconds * 2, seconds, 1.0, workers + 20, 100, **extra)  # type: ignore[arg-type]


def test_a_job_of_ten_thousand_short_named_workers_needs_pod_ips_and_five_thousand_do_not() -> None:
    # The start-up curve's names: job `curve`, namespace `curve-<workers>-<round>-ours`.
    assert fits_by_name("curve", "curve-5000-0-ours", 5000)
    assert not fits_by_name("curve", "curve-10000-0-ours", 10_000)


def test_only_ours_names_its_hosts_by_pod_ip_when_the_job_asks() -> None:
    asking = Shape(annotations=tuple(IP_HOSTFILE.items()))
    ours = Ours(Settings())
    upstream = Upstream(Settings(), Path("/nonexistent/mpi-operator"))
    assert asking.hostfile_of(ours) == "ip"
    assert asking.hostfile_of(upstream) == "dns"
    assert Shape().hostfile_of(ours) == "dns"


def test_the_pod_ip_runs_of_ours_are_a_series_of_their_own() -> None:
    points = [
        point("mpioperator", 10_000, 1.0, note="refused"),
        point("upstream v0.8.2", 10_000, 3.0, hostfile_hosts=9600, discovered_hosts=9500),
        point("mpioperator", 10_000, 2.0, hostfile="ip", hostfile_hosts=10_000, discovered_hosts=10_000),
    ]
    assert series_names(points) == ["mpioperator", "upstream v0.8.2", "mpioperator (pod-IP hostfile)"]
    rows = table(points).splitlines()[1:]
    assert "did not start in 1: refused" in rows[0]
    assert rows[1].split()[-1] == "9600/9500"
    assert rows[2].startswith("   10000 mpioperator (pod-IP hostfile)")
    assert rows[2].split()[-1] == "10000/10000"


def test_medians_and_spreads_are_per_size_and_series() -> None:
    points = [point("mpioperator", 100, s) for s in (1.0, 3.0, 2.0)]
    (row,) = table(points).splitlines()[1:]
    assert "2.00 (1.00-3.00)" in row
    assert row.split()[2] == "3"  # runs


def test_an_earlier_runs_figures_are_read_back_with_the_fields_it_did_not_have(tmp_path: Path) -> None:
    older = REPO / "docs" / "bench" / "startup-curve-3-rounds-2026-11-29.json"
    newer = tmp_path / "points.json"
    newer.write_text(json.dumps([asdict(point("mpioperator", 10_000, 2.0, hostfile="ip"))]))

    points = read_points([older, newer])

    assert len(points) == 19  # 3 sizes x 3 rounds x 2 operators, and the newer one
    assert {p.hostfile for p in points[:-1]} == {"dns"} and points[-1].hostfile == "ip"
    assert points[0].hostfile_hosts == -1
