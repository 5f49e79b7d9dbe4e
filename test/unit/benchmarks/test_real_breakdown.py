"""The real-node breakdown's arithmetic: the three shares add up to the total, and the runtime's log
timestamps are read to the nanosecond's microsecond."""

from __future__ import annotations

import datetime as dt

from test.benchmarks.bench_real_breakdown import Breakdown, _parse_rfc3339, table


def test_a_runtime_timestamp_keeps_its_fraction_of_a_second() -> None:
    expected = dt.datetime(2026, 11, 29, 2, 3, 4, tzinfo=dt.UTC).timestamp() + 0.123456789
    assert abs(_parse_rfc3339("2026-11-29T02:03:04.123456789Z") - expected) < 1e-6
    assert _parse_rfc3339("2026-11-29T02:03:04Z") == expected - 0.123456789


def test_the_table_gives_the_median_of_each_share_and_the_operators_part_of_the_total() -> None:
    rows = [
        Breakdown(16, "ssh", 20.0, 1.0, 12.0, 7.0, 0.8, 0.2),
        Breakdown(16, "ssh", 10.0, 0.5, 6.0, 3.5, 0.4, 0.1),
        Breakdown(16, "ssh", 30.0, 3.0, 17.0, 10.0, 2.9, 0.1),
    ]
    line = table(rows).splitlines()[1].split()
    assert line[:7] == ["16", "ssh", "20.00", "1.00", "5.0%", "0.80", "0.10"]
    assert line[7:9] == ["12.00", "7.00"]
    assert "(10.00-30.00," in line
