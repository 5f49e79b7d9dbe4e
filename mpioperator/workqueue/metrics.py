"""Queue instrumentation: a tiny hook interface, a no-op default and client-go's Prometheus series."""

from __future__ import annotations

from typing import Protocol

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

_LATENCY_BUCKETS = tuple(10.0**e for e in range(-8, 2))  # 10 ns .. 10 s, as client-go


class QueueMetrics(Protocol):
    def added(self, depth: int) -> None: ...

    def got(self, depth: int, waited: float) -> None: ...

    def done(self, worked: float) -> None: ...

    def retried(self) -> None: ...

    def in_flight(self, unfinished: float, longest: float) -> None: ...


class NoMetrics:
    def added(self, depth: int) -> None:
        pass

    def got(self, depth: int, waited: float) -> None:
        pass

    def done(self, worked: float) -> None:
        pass

    def retried(self) -> None:
        pass

    def in_flight(self, unfinished: float, longest: float) -> None:
        pass


class PrometheusQueueMetrics:
    """One queue's series under client-go's names, labelled with the queue's name."""

    _families: dict[int, tuple[Gauge, Counter, Histogram, Histogram, Counter, Gauge, Gauge]] = {}

    def __init__(self, name: str, registry: CollectorRegistry) -> None:
        families = self._families.get(id(registry))
        if families is None:
            families = (
                Gauge("workqueue_depth", "Current depth of workqueue", ["name"], registry=registry),
                Counter(
                    "workqueue_adds", "Total number of adds handled by workqueue", ["name"], registry=registry
                ),
                Histogram(
                    "workqueue_queue_duration_seconds",
                    "How long in seconds an item stays in workqueue before being requested",
                    ["name"],
                    buckets=_LATENCY_BUCKETS,
                    registry=registry,
                ),
                Histogram(
                    "workqueue_work_duration_seconds",
                    "How long in seconds processing an item from workqueue takes",
                    ["name"],
                    buckets=_LATENCY_BUCKETS,
                    registry=registry,
                ),
                Counter(
                    "workqueue_retries",
                    "Total number of retries handled by workqueue",
                    ["name"],
                    registry=registry,
                ),
                Gauge(
                    "workqueue_unfinished_work_seconds",
                    "How many seconds of work has been done that is in progress and hasn't been observed by "
                    "work_duration",
                    ["name"],
                    registry=registry,
                ),
                Gauge(
                    "workqueue_longest_running_processor_seconds",
                    "How many seconds has the longest running processor for workqueue been running",
                    ["name"],
                    registry=registry,
                ),
            )
            self._families[id(registry)] = families
        depth, adds, latency, work, retries, unfinished, longest = families
        self._depth = depth.labels(name=name)
        self._adds = adds.labels(name=name)
        self._latency = latency.labels(name=name)
        self._work = work.labels(name=name)
        self._retries = retries.labels(name=name)
        self._unfinished = unfinished.labels(name=name)
        self._longest = longest.labels(name=name)

    def added(self, depth: int) -> None:
        self._adds.inc()
        self._depth.set(depth)

    def got(self, depth: int, waited: float) -> None:
        self._depth.set(depth)
        self._latency.observe(waited)

    def done(self, worked: float) -> None:
        self._work.observe(worked)

    def retried(self) -> None:
        self._retries.inc()

    def in_flight(self, unfinished: float, longest: float) -> None:
        self._unfinished.set(unfinished)
        self._longest.set(longest)
