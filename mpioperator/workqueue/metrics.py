"""Queue instrumentation: a tiny hook interface, a no-op default and client-go's Prometheus series."""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple, Protocol

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

_LATENCY_BUCKETS = tuple(10.0**e for e in range(-8, 2))  # 10 ns .. 10 s, as client-go


class InFlight(NamedTuple):
    unfinished: float
    """Seconds of work done so far by every item still being processed."""
    longest: float
    """Seconds the oldest item still being processed has been at it."""


InFlightProbe = Callable[[], InFlight]


class QueueMetrics(Protocol):
    def added(self, depth: int) -> None:
        """An item became dirty; `depth` counts the items added but not yet handed out."""

    def got(self, depth: int, waited: float) -> None:
        """An item was handed out after `waited` seconds in the queue."""

    def done(self, worked: float) -> None:
        """Processing an item took `worked` seconds."""

    def retried(self) -> None:
        """An item was re-added with a delay."""

    def watch_in_flight(self, probe: InFlightProbe) -> None:
        """Called once by the queue; `probe` tells the work in progress at the moment it is called.

        A pull rather than a push so a stuck processor shows up at the next scrape, which is what
        client-go's 500 ms refresh loop is for.
        """


class NoMetrics:
    def added(self, depth: int) -> None:
        pass

    def got(self, depth: int, waited: float) -> None:
        pass

    def done(self, worked: float) -> None:
        pass

    def retried(self) -> None:
        pass

    def watch_in_flight(self, probe: InFlightProbe) -> None:
        pass


class PrometheusMetricsProvider:
    """client-go's workqueue metric families in one registry; `for_queue` gives one queue's hooks."""

    def __init__(self, registry: CollectorRegistry) -> None:
        def gauge(name: str, doc: str) -> Gauge:
            return Gauge(name, doc, ["name"], registry=registry)

        def counter(name: str, doc: str) -> Counter:
            # prometheus_client appends `_total` on exposition: these are workqueue_adds_total etc.
            return Counter(name, doc, ["name"], registry=registry)

        def histogram(name: str, doc: str) -> Histogram:
            return Histogram(name, doc, ["name"], buckets=_LATENCY_BUCKETS, registry=registry)

        self.depth = gauge("workqueue_depth", "Items added to the work queue and not yet handed out.")
        self.adds = counter("workqueue_adds", "Items added to the work queue.")
        self.latency = histogram(
            "workqueue_queue_duration_seconds", "Seconds an item waited before a worker took it."
        )
        self.work = histogram("workqueue_work_duration_seconds", "Seconds a worker spent on one item.")
        self.retries = counter("workqueue_retries", "Items re-added to the work queue with a delay.")
        self.unfinished = gauge(
            "workqueue_unfinished_work_seconds",
            "Seconds of work so far on items still being processed; steady growth means a stuck worker.",
        )
        self.longest = gauge(
            "workqueue_longest_running_processor_seconds",
            "Seconds the longest-running worker has spent on its current item.",
        )

    def for_queue(self, name: str) -> PrometheusQueueMetrics:
        return PrometheusQueueMetrics(self, name)


class PrometheusQueueMetrics:
    """One queue's series, labelled `name`."""

    def __init__(self, families: PrometheusMetricsProvider, name: str) -> None:
        self._depth = families.depth.labels(name=name)
        self._adds = families.adds.labels(name=name)
        self._latency = families.latency.labels(name=name)
        self._work = families.work.labels(name=name)
        self._retries = families.retries.labels(name=name)
        self._unfinished = families.unfinished.labels(name=name)
        self._longest = families.longest.labels(name=name)

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

    def watch_in_flight(self, probe: InFlightProbe) -> None:
        self._unfinished.set_function(lambda: probe().unfinished)
        self._longest.set_function(lambda: probe().longest)
