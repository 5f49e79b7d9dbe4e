"""The controller's queue: rate-limited retries, forget, and metrics hooks."""

from __future__ import annotations

import pytest
from prometheus_client import CollectorRegistry

from mpioperator.clock import FakeClock
from mpioperator.workqueue.metrics import PrometheusQueueMetrics
from mpioperator.workqueue.rate_limiters import ItemExponentialFailureRateLimiter
from mpioperator.workqueue.rate_limiting import RateLimitingQueue

pytestmark = pytest.mark.unit


async def test_rate_limited_add_waits_the_backoff_then_forget_resets_it() -> None:
    clock = FakeClock()
    q: RateLimitingQueue[str] = RateLimitingQueue(ItemExponentialFailureRateLimiter(1.0, 60.0), clock=clock)
    q.add_rate_limited("a")
    assert len(q) == 0
    await clock.advance(1.0)
    assert len(q) == 1
    await q.get()
    q.done("a")
    q.add_rate_limited("a")
    await clock.advance(1.0)
    assert len(q) == 0, "second failure waits 2 s"
    await clock.advance(1.0)
    assert len(q) == 1
    assert q.num_requeues("a") == 2
    q.forget("a")
    assert q.num_requeues("a") == 0


async def test_prometheus_metrics_observe_depth_adds_latency_work_and_retries() -> None:
    clock = FakeClock()
    registry = CollectorRegistry()
    q: RateLimitingQueue[str] = RateLimitingQueue(
        ItemExponentialFailureRateLimiter(1.0, 60.0),
        clock=clock,
        name="MPIJob",
        metrics=PrometheusQueueMetrics("MPIJob", registry),
    )

    def sample(name: str) -> float | None:
        return registry.get_sample_value(name, {"name": "MPIJob"})

    q.add("a")
    q.add("b")
    assert sample("workqueue_depth") == 2
    assert sample("workqueue_adds_total") == 2
    await clock.advance(3)
    await q.get()
    assert sample("workqueue_depth") == 1
    assert sample("workqueue_queue_duration_seconds_sum") == 3
    await clock.advance(2)
    q.done("a")
    assert sample("workqueue_work_duration_seconds_sum") == 2
    q.add_rate_limited("a")
    assert sample("workqueue_retries_total") == 1


async def test_in_flight_metrics_report_unfinished_work() -> None:
    clock = FakeClock()
    registry = CollectorRegistry()
    q: RateLimitingQueue[str] = RateLimitingQueue(
        ItemExponentialFailureRateLimiter(1.0, 60.0),
        clock=clock,
        name="q",
        metrics=PrometheusQueueMetrics("q", registry),
    )
    q.add("a")
    q.add("b")
    await q.get()
    await clock.advance(4)
    await q.get()
    assert registry.get_sample_value("workqueue_unfinished_work_seconds", {"name": "q"}) == 4
    assert registry.get_sample_value("workqueue_longest_running_processor_seconds", {"name": "q"}) == 4
