"""client-go's work queue semantics on one asyncio loop."""

from mpioperator.workqueue.delaying import DelayingQueue
from mpioperator.workqueue.metrics import (
    InFlight,
    NoMetrics,
    PrometheusMetricsProvider,
    PrometheusQueueMetrics,
    QueueMetrics,
)
from mpioperator.workqueue.queue import Queue
from mpioperator.workqueue.rate_limiters import (
    BucketRateLimiter,
    ItemExponentialFailureRateLimiter,
    ItemFastSlowRateLimiter,
    MaxOfRateLimiter,
    RateLimiter,
    default_controller_rate_limiter,
)
from mpioperator.workqueue.rate_limiting import RateLimitingQueue

__all__ = [
    "BucketRateLimiter",
    "DelayingQueue",
    "InFlight",
    "ItemExponentialFailureRateLimiter",
    "ItemFastSlowRateLimiter",
    "MaxOfRateLimiter",
    "NoMetrics",
    "PrometheusMetricsProvider",
    "PrometheusQueueMetrics",
    "Queue",
    "QueueMetrics",
    "RateLimiter",
    "RateLimitingQueue",
    "default_controller_rate_limiter",
]
