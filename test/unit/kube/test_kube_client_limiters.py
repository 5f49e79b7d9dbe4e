"""Which requests take a client-side token, and from whose bucket (client-go's rules)."""

from __future__ import annotations

import threading
from typing import Any

import pytest

from mpioperator.clock import FakeClock
from mpioperator.kube.client import KubeClient
from mpioperator.kube.list_options import ListOptions
from mpioperator.kube.ratelimit import ClientLimiters
from mpioperator.kube.resources import (
    CONFIG_MAPS,
    EVENTS,
    JOBS,
    LEASES,
    MPIJOBS,
    PODS,
    PRIORITY_CLASSES,
    SCHEDULER_PLUGINS_POD_GROUPS,
    VOLCANO_POD_GROUPS,
    Resource,
)
from mpioperator.kube.transport import Answer


class EmptyBody:
    def is_eof(self) -> bool:
        return True

    async def readany(self) -> bytes:
        return b""


class EmptyStream:
    """A watch answer whose server ends the stream at once: what the watch reads of an aiohttp response."""

    status = 200
    headers: dict[str, str] = {}
    content = EmptyBody()

    def release(self) -> None:
        pass

    def close(self) -> None:
        pass


class AnsweringTransport:
    """Answers every call at once with an empty list or object; records what reached the wire."""

    def __init__(self) -> None:
        self.pool_size = 4
        self.sent: list[str] = []
        self._lock = threading.Lock()

    async def request(self, method: str, path: str, **_: Any) -> Answer:
        with self._lock:
            self.sent.append(f"{method} {path}")
        return Answer(200, {}, b'{"items": [], "metadata": {"resourceVersion": "1"}}')

    async def open(self, path: str, **kwargs: Any) -> EmptyStream:
        with self._lock:
            self.sent.append(f"WATCH {path}")
        return EmptyStream()

    async def close(self) -> None:
        pass


def client(limiters: ClientLimiters) -> tuple[KubeClient, AnsweringTransport]:
    transport = AnsweringTransport()
    return KubeClient(transport, limiters=limiters), transport  # type: ignore[arg-type]


async def watch_once(kube: KubeClient, res: Resource) -> None:
    async for _ in kube.watch(res, "ns", ListOptions(resource_version="1", timeout_seconds=60)):
        pass


async def test_a_watch_takes_no_token_while_a_list_takes_one() -> None:
    time = FakeClock(on_sleep="return")  # time stands still: waits are recorded, not slept
    limiters = ClientLimiters(5.0, 1, clock=time)
    kube, transport = client(limiters)
    await kube.list(PODS, "ns")
    for _ in range(3):
        await watch_once(kube, PODS)  # with the bucket empty: a token would be a wait
    assert time.sleeps == []
    assert limiters.taken() == {"kube": 1}
    await kube.list(PODS, "ns")
    assert time.sleeps == pytest.approx([0.2])
    assert limiters.taken() == {"kube": 2}
    assert [s.split()[0] for s in transport.sent] == ["GET", "WATCH", "WATCH", "WATCH", "GET"]
    await kube.close()


async def test_each_upstream_client_has_a_bucket_of_its_own() -> None:
    time = FakeClock(on_sleep="return")  # time stands still: waits are recorded, not slept
    limiters = ClientLimiters(5.0, 1, clock=time)
    kube, _ = client(limiters)
    # One request per upstream client, each the first of its bucket: nobody waits.
    await kube.list(PODS, "ns")
    await kube.list(MPIJOBS, "ns")
    await kube.get(LEASES, "mpi-operator", "ns")
    await kube.list(VOLCANO_POD_GROUPS, "ns")
    await kube.list(SCHEDULER_PLUGINS_POD_GROUPS, "ns")
    assert time.sleeps == []
    # Kubernetes' own groups share upstream's one Kubernetes client, so these wait behind the pod list.
    await kube.list(JOBS, "ns")
    await kube.create(EVENTS, {"metadata": {"name": "e"}}, "ns")
    await kube.list(PRIORITY_CLASSES)
    assert time.sleeps == pytest.approx([0.2, 0.4, 0.6])
    assert limiters.taken() == {
        "kube": 4,
        "mpijob": 1,
        "leader-election": 1,
        "volcano": 1,
        "scheduler-plugins": 1,
    }
    assert limiters.waited() == pytest.approx(
        {"kube": 1.2, "mpijob": 0.0, "leader-election": 0.0, "volcano": 0.0, "scheduler-plugins": 0.0}
    )
    await kube.close()


async def test_a_burst_of_writes_leaves_the_lease_renewal_its_own_tokens() -> None:
    time = FakeClock(on_sleep="return")  # time stands still: waits are recorded, not slept
    limiters = ClientLimiters(5.0, 10, clock=time)
    kube, _ = client(limiters)
    for i in range(30):
        await kube.create(CONFIG_MAPS, {"metadata": {"name": f"c{i}"}}, "ns")
    waits_before = len(time.sleeps)
    await kube.get(LEASES, "mpi-operator", "ns")
    await kube.update(LEASES, {"metadata": {"name": "mpi-operator", "namespace": "ns"}})
    assert waits_before == 20
    assert len(time.sleeps) == waits_before
    await kube.close()


@pytest.mark.parametrize(("qps", "burst"), [(0.0, 1), (5.0, 0)])
def test_a_client_with_nonsense_limits_is_refused_when_built(qps: float, burst: int) -> None:
    with pytest.raises(ValueError, match="qps"):
        KubeClient(AnsweringTransport(), qps=qps, burst=burst)  # type: ignore[arg-type]
