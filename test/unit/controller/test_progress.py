"""Progress read off untrusted launcher log lines (controller/progress.py), and the one log reader's
bounds (controller/log_follower.py): lines already seen are not seen again, and the overall budget
refuses reads beyond its rate without waiting."""

from __future__ import annotations

import datetime as dt
import re

from mpioperator.clock import FakeClock
from mpioperator.controller import progress
from mpioperator.controller.log_follower import FollowSettings, LogFollower, stamp_of
from mpioperator.tokenbucket import TokenBucket
from test.unit.controller.log_fixtures import MemoryLogs


def test_a_json_line_gives_step_total_and_at_most_eight_bounded_metrics() -> None:
    metrics = {f"m{i}": i for i in range(20)} | {"x" * 100: "y" * 100}
    line = '{"step": 7, "total": 28, "metrics": ' + str(metrics).replace("'", '"') + "}"

    found = progress.parse_json(line)

    assert found is not None
    assert (found.done, found.total, found.percent(), found.text()) == (7, 28, 25, "7/28 (25%)")
    assert len(found.metrics) == 8
    assert all(len(k) <= 63 and len(v) <= 63 for k, v in found.metrics.items())


def test_lines_that_are_not_progress_give_none() -> None:
    for line in (
        "",
        "epoch 3",
        '{"step": -1}',
        '{"step": 1e999}',
        '{"step": NaN}',
        '{"step": true}',
        '{"total": 3}',
        '["step", 1]',
        "{" + " " * 5000 + '"step": 1}',  # the line is cut before it is parsed
    ):
        assert progress.parse_json(line) is None, line


def test_a_pattern_without_total_shows_done_alone_and_no_percent() -> None:
    found = progress.parse_pattern(re.compile(r"epoch (?P<done>\d+) loss (?P<loss>\S+)"), "epoch 4 loss 0.31")

    assert found is not None
    assert (found.done, found.total, found.percent(), found.text(), found.metrics) == (
        4,
        None,
        None,
        "4",
        {"loss": "0.31"},
    )


def test_percent_is_clamped_to_100_when_done_passes_total() -> None:
    assert progress.Progress(12, 10).percent() == 100


def test_kubelet_timestamps_are_read_to_the_nanosecond() -> None:
    stamp, rest = stamp_of("2026-01-01T00:00:05.000000123Z hello world")
    assert stamp == (dt.datetime(2026, 1, 1, 0, 0, 5, tzinfo=dt.UTC), 123)
    assert rest == "hello world"
    assert stamp_of("no stamp here") == (None, "no stamp here")


async def test_lines_already_read_are_not_new_even_when_they_share_a_timestamp() -> None:
    clock = FakeClock()
    logs = MemoryLogs()
    logs.clock = clock
    follower = LogFollower(logs, clock, FollowSettings(interval=1, qps=100, burst=100))
    pod = {"metadata": {"name": "pi-launcher-x1", "namespace": "default", "uid": "p1"}}
    logs.write('{"step": 1}', '{"step": 2}')

    first = await follower.read("job", pod, None, "json", clock.utcnow())
    assert first.progress == progress.Progress(2)
    output_at = first.last_output

    await clock.advance(5)
    again = await follower.read("job", pod, None, "json", clock.utcnow())
    assert again.last_output == output_at  # the same two lines served again are not new output
    assert logs.calls[1]["since_time"] == "2026-01-01T00:00:00Z"


async def test_the_overall_budget_refuses_reads_beyond_its_rate_without_waiting() -> None:
    clock = FakeClock()
    logs = MemoryLogs()
    logs.clock = clock
    follower = LogFollower(logs, clock, FollowSettings(interval=1, qps=5, burst=10))
    pods = [{"metadata": {"name": f"p{i}", "namespace": "default", "uid": f"u{i}"}} for i in range(100)]

    for pod in pods:  # 100 jobs due at once: the burst of 10 is read, the rest refused
        await follower.read(pod["metadata"]["uid"], pod, None, None, clock.utcnow())
    assert (follower.reads, follower.refused) == (10, 90)
    assert clock.sleeps == []  # nothing waited for a token

    await clock.advance(2)  # two seconds at 5 a second: 10 more
    for pod in pods:
        await follower.read(pod["metadata"]["uid"], pod, None, None, clock.utcnow())
    assert follower.reads == 20


def test_try_take_takes_a_token_only_when_one_exists_now() -> None:
    clock = FakeClock()
    bucket = TokenBucket(2, 2, clock)
    assert [bucket.try_take() for _ in range(3)] == [True, True, False]
    assert bucket.reserve() > 0  # a refused try took nothing: the reservation queues behind the two taken


async def test_a_refused_or_failed_read_waits_for_the_jobs_next_turn() -> None:
    clock = FakeClock()
    logs = MemoryLogs()
    logs.clock = clock
    logs.failing = True
    follower = LogFollower(logs, clock, FollowSettings(interval=10, qps=100, burst=100))
    pod = {"metadata": {"name": "p", "namespace": "default", "uid": "u"}}

    await follower.read("job", pod, None, None, clock.utcnow())
    await clock.advance(3)
    await follower.read("job", pod, None, None, clock.utcnow())  # an event's sync: not the job's turn

    assert (follower.reads, follower.failures) == (1, 1)
    assert follower.due_in("job", clock.utcnow()) == 7
