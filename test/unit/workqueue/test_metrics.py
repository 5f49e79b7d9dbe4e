"""Queue metrics: what the hooks observe, and client-go's Prometheus series."""

from __future__ import annotations

from prometheus_client import CollectorRegistry, generate_latest

from mpioperator.clock import FakeClock
from mpioperator.workqueue.metrics import InFlight, InFlightProbe, PrometheusMetricsProvider
from mpioperator.workqueue.rate_limiters import ItemExponentialFailureRateLimiter
from mpioperator.workqueue.rate_limiting import RateLimitingQueue


class RecordingMetrics:
    def __init__(self) -> None:
        self.calls: list[tuple[str, float]] = []
        self.probe: InFlightProbe | None = None

    def added(self, depth: int) -> None:
        self.calls.append(("added", depth))

    def got(self, depth: int, waited: float) -> None:
        self.calls.append(("got depth", depth))
        self.calls.append(("got waited", waited))

    def done(self, worked: float) -> None:
        self.calls.append(("done", worked))

    def retried(self) -> None:
        self.calls.append(("retried", 1))

    def watch_in_flight(self, probe: InFlightProbe) -> None:
        self.probe = probe


def new_queue(metrics: RecordingMetrics) -> tuple[RateLimitingQueue[str], FakeClock]:
    clock = FakeClock()
    q: RateLimitingQueue[str] = RateLimitingQueue(
        ItemExponentialFailureRateLimiter(1.0, 60.0), clock=clock, name="test", metrics=metrics
    )
    return q, clock


async def test_hooks_observe_depth_adds_latency_and_work_duration() -> None:
    metrics = RecordingMetrics()
    q, clock = new_queue(metrics)
    q.add("a")
    q.add("a")  # collapsed: not an add
    q.add("b")
    await clock.advance(3)
    await q.get()
    await clock.advance(2)
    q.done("a")
    assert metrics.calls == [
        ("added", 1),
        ("added", 2),
        ("got depth", 1),
        ("got waited", 3.0),
        ("done", 2.0),
    ]


async def test_depth_counts_an_item_re_added_while_it_is_processed() -> None:
    metrics = RecordingMetrics()
    q, clock = new_queue(metrics)
    q.add("a")
    await q.get()
    await clock.advance(1)
    q.add("a")
    await clock.advance(4)
    q.done("a")
    await q.get()
    assert metrics.calls[-4:] == [("added", 1), ("done", 5.0), ("got depth", 0), ("got waited", 4.0)]


async def test_every_delayed_add_counts_as_a_retry() -> None:
    metrics = RecordingMetrics()
    q, _ = new_queue(metrics)
    q.add_rate_limited("a")
    q.add_after("b", 5)
    q.add_after("c", 0)
    q.shut_down()
    q.add_rate_limited("d")
    assert [name for name, _ in metrics.calls].count("retried") == 3


async def test_a_delay_that_is_not_a_retry_is_not_counted_as_one() -> None:
    metrics = RecordingMetrics()
    q, clock = new_queue(metrics)
    q.add_after("settling", 0.3, retry=False)
    await clock.advance(0.3)
    assert len(q) == 1
    assert [name for name, _ in metrics.calls].count("retried") == 0


async def test_in_flight_probe_reports_work_still_in_progress_at_the_time_asked() -> None:
    metrics = RecordingMetrics()
    q, clock = new_queue(metrics)
    assert metrics.probe is not None
    assert metrics.probe() == InFlight(0.0, 0.0)
    q.add("a")
    q.add("b")
    await q.get()
    await clock.advance(4)
    await q.get()
    await clock.advance(1)
    assert metrics.probe() == InFlight(unfinished=5.0 + 1.0, longest=5.0)
    q.done("a")
    assert metrics.probe() == InFlight(unfinished=1.0, longest=1.0)


async def test_prometheus_series_follow_the_queue_with_the_fake_clock() -> None:
    clock = FakeClock()
    registry = CollectorRegistry()
    q: RateLimitingQueue[str] = RateLimitingQueue(
        ItemExponentialFailureRateLimiter(1.0, 60.0),
        clock=clock,
        name="mpi-job",
        metrics=PrometheusMetricsProvider(registry).for_queue("mpi-job"),
    )

    def sample(name: str) -> float | None:
        return registry.get_sample_value(name, {"name": "mpi-job"})

    q.add("a")
    q.add("b")
    assert sample("workqueue_depth") == 2
    assert sample("workqueue_adds_total") == 2
    await clock.advance(3)
    await q.get()
    assert sample("workqueue_depth") == 1
    assert sample("workqueue_queue_duration_seconds_sum") == 3
    await clock.advance(2)
    assert sample("workqueue_unfinished_work_seconds") == 2, "a processor still at work shows up on scrape"
    assert sample("workqueue_longest_running_processor_seconds") == 2
    q.done("a")
    assert sample("workqueue_work_duration_seconds_sum") == 2
    assert sample("workqueue_unfinished_work_seconds") == 0
    q.add_rate_limited("a")
    assert sample("workqueue_retries_total") == 1
    await q.close()  # ends the retry's delay timer


def test_prometheus_exposes_client_go_names_labelled_by_queue() -> None:
    registry = CollectorRegistry()
    provider = PrometheusMetricsProvider(registry)
    for name in ("mpi-job", "other"):
        RateLimitingQueue[str](
            ItemExponentialFailureRateLimiter(1.0, 60.0), clock=FakeClock(), metrics=provider.for_queue(name)
        ).add("x")
    text = generate_latest(registry).decode()
    for series in (
        "workqueue_depth",
        "workqueue_adds_total",
        "workqueue_queue_duration_seconds_count",
        "workqueue_work_duration_seconds_count",
        "workqueue_retries_total",
        "workqueue_unfinished_work_seconds",
        "workqueue_longest_running_processor_seconds",
    ):
        assert f'{series}{{name="mpi-job"' in text
        assert f'{series}{{name="other"' in text
    assert registry.get_sample_value("workqueue_adds_total", {"name": "other"}) == 1
