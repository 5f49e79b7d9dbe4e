"""Client-side request throttling (client-go's --kube-api-qps/--kube-api-burst), which the Python
client lacks: token buckets that make callers wait their turn rather than fail.

Upstream builds one client-go client per API it talks to (Kubernetes' own, MPIJobs, leader election,
the gang scheduler's PodGroups), all from one rest.Config, and each client has its own bucket of that
QPS and burst. `ClientLimiters` keeps one bucket per such client and charges a request to the client
upstream would send it with, so a burst of pod creations cannot starve a lease renewal or an MPIJob
status write. Watches are not charged at all (client-go does not throttle them); the caller pays here.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

# The client upstream sends a request with, by API group; every other group (core, batch,
# scheduling.k8s.io, events) goes through its Kubernetes clientset, which shares one bucket.
KUBE_CLIENT = "kube"
CLIENT_OF_GROUP = {
    "kubeflow.org": "mpijob",
    "coordination.k8s.io": "leader-election",
    "scheduling.volcano.sh": "volcano",
    "scheduling.x-k8s.io": "scheduler-plugins",
}


def client_of(group: str) -> str:
    """The name of the upstream client (and so of the bucket) that requests in API `group` use."""
    return CLIENT_OF_GROUP.get(group, KUBE_CLIENT)


class TokenBucket:
    def __init__(
        self,
        qps: float,
        burst: int,
        *,
        now: Callable[[], float] | None = None,
        sleep: Callable[[float], Awaitable[None]] | None = None,
    ) -> None:
        if qps <= 0 or burst < 1:
            raise ValueError("qps must be > 0 and burst >= 1")
        self.qps = qps
        self.burst = burst
        self._now = now or (lambda: asyncio.get_running_loop().time())
        self._sleep = sleep or asyncio.sleep
        self._tokens = float(burst)
        self._last: float | None = None
        # Tokens handed out, and the seconds their takers were told to wait, since the bucket was made.
        self.taken = 0
        self.waited = 0.0

    def reserve(self) -> float:
        """Take a token (possibly one not yet minted) and return how long to wait for it."""
        now = self._now()
        if self._last is not None:
            self._tokens = min(float(self.burst), self._tokens + (now - self._last) * self.qps)
        self._last = now
        self._tokens -= 1.0
        delay = 0.0 if self._tokens >= 0 else -self._tokens / self.qps
        self.taken += 1
        self.waited += delay
        return delay

    async def acquire(self) -> float:
        delay = self.reserve()
        if delay > 0:
            await self._sleep(delay)
        return delay


class ClientLimiters:
    """One TokenBucket of `qps`/`burst` per upstream client, made when that client is first used."""

    def __init__(
        self,
        qps: float,
        burst: int,
        *,
        now: Callable[[], float] | None = None,
        sleep: Callable[[float], Awaitable[None]] | None = None,
    ) -> None:
        if qps <= 0 or burst < 1:  # said at construction, not at the first request
            raise ValueError("qps must be > 0 and burst >= 1")
        self.qps = qps
        self.burst = burst
        self._now = now
        self._sleep = sleep
        self._buckets: dict[str, TokenBucket] = {}

    def for_group(self, group: str) -> TokenBucket:
        client = client_of(group)
        bucket = self._buckets.get(client)
        if bucket is None:
            bucket = TokenBucket(self.qps, self.burst, now=self._now, sleep=self._sleep)
            self._buckets[client] = bucket
        return bucket

    def taken(self) -> dict[str, int]:
        """Tokens handed out so far, by client; a client never used is absent."""
        return {client: bucket.taken for client, bucket in self._buckets.items()}

    def waited(self) -> dict[str, float]:
        """Seconds callers were told to wait for a token so far, by client."""
        return {client: bucket.waited for client, bucket in self._buckets.items()}
