"""Client-side request throttling (client-go's --kube-api-qps/--kube-api-burst), which the Python
client lacks: token buckets that make callers wait their turn rather than fail.

Upstream builds one client-go client per API it talks to (Kubernetes' own, MPIJobs, leader election,
the gang scheduler's PodGroups), all from one rest.Config, and each client has its own bucket of that
QPS and burst. `ClientLimiters` keeps one bucket per such client and charges a request to the client
upstream would send it with, so a burst of pod creations cannot starve a lease renewal or an MPIJob
status write. Watches are not charged at all (client-go does not throttle them); the caller pays here.
"""

from __future__ import annotations

from mpioperator.clock import Clock
from mpioperator.tokenbucket import TokenBucket

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


class ClientLimiters:
    """One TokenBucket of `qps`/`burst` per upstream client, made when that client is first used."""

    def __init__(self, qps: float, burst: int, *, clock: Clock | None = None) -> None:
        if qps <= 0 or burst < 1:  # said at construction, not at the first request
            raise ValueError(f"a token bucket needs qps > 0 and burst >= 1, got qps={qps} burst={burst}")
        self.qps = qps
        self.burst = burst
        self._clock = clock
        self._buckets: dict[str, TokenBucket] = {}

    def for_group(self, group: str) -> TokenBucket:
        client = client_of(group)
        bucket = self._buckets.get(client)
        if bucket is None:
            bucket = TokenBucket(self.qps, self.burst, self._clock)
            self._buckets[client] = bucket
        return bucket

    def taken(self) -> dict[str, int]:
        """Tokens handed out so far, by client; a client never used is absent."""
        return {client: bucket.taken for client, bucket in self._buckets.items()}

    def waited(self) -> dict[str, float]:
        """Seconds callers were told to wait for a token so far, by client."""
        return {client: bucket.waited for client, bucket in self._buckets.items()}
