"""The launcher's wait-for-hosts spares the cluster's DNS and the workers while it waits: a host it has not
reached is checked less and less often, up to a cap; only so many hosts are checked at once; and the
hostfile of a large job is read in linear time. With an injected clock and resolver."""

from __future__ import annotations

import asyncio
import itertools
import socket
import time
from pathlib import Path

from mpioperator.app.wait_for_hosts import Waiter, hosts_of, run
from test.unit.app.test_wait_for_hosts import Clock


class NeverResolves:
    """A resolver for which no name resolves; records when each name was looked up and how many lookups
    were in flight at once."""

    def __init__(self, clock: Clock) -> None:
        self.clock = clock
        self.looked_up: dict[str, list[float]] = {}
        self.in_flight = 0
        self.most_in_flight = 0

    async def resolve(self, host: str, port: int) -> list[tuple[str, int]]:
        self.looked_up.setdefault(host, []).append(self.clock.now)
        self.in_flight += 1
        self.most_in_flight = max(self.most_in_flight, self.in_flight)
        try:
            for _ in range(3):  # a lookup takes a while: let the others start meanwhile
                await asyncio.sleep(0)
            raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")
        finally:
            self.in_flight -= 1

    async def connect(self, address: tuple[str, int], timeout: float) -> None:
        raise AssertionError("nothing resolves, so nothing is connected to")


def _wait(tmp_path: Path, hosts: list[str], deadline: int) -> tuple[int, NeverResolves, Clock]:
    clock = Clock()
    network = NeverResolves(clock)
    hostfile = tmp_path / "hostfile"
    hostfile.write_text("".join(f"{host} slots=1\n" for host in hosts))
    code = run(
        [f"--hostfile={hostfile}", "--port=2222", f"--deadline-seconds={deadline}"],
        waiter_for=lambda names, port: Waiter(names, port, "pi-launcher", network.resolve, network.connect),
        monotonic=clock.monotonic,
        sleep=clock.sleep,
        termination_log=str(tmp_path / "termination-log"),
    )
    return code, network, clock


def test_a_host_not_reached_is_looked_up_less_and_less_often_up_to_a_cap(tmp_path: Path) -> None:
    code, network, _ = _wait(tmp_path, ["pi-worker-0.pi.ns.svc"], deadline=60)

    assert code == 3
    times = network.looked_up["pi-worker-0.pi.ns.svc"]
    gaps = [later - earlier for earlier, later in itertools.pairwise(times)]
    cap = 5.0
    assert gaps[:3] == [1.0, 2.0, 4.0]
    assert all(gap == cap for gap in gaps[4:-1]) and max(gaps) == cap
    assert len(times) <= 4 + 60 / cap + 1  # against 61 lookups at one a second


def test_only_so_many_hosts_are_checked_at_once(tmp_path: Path) -> None:
    hosts = [f"pi-worker-{i}.pi.ns.svc" for i in range(200)]

    code, network, _ = _wait(tmp_path, hosts, deadline=3)

    assert code == 3
    assert all(network.looked_up[host] for host in hosts)  # every host was looked up all the same
    assert network.most_in_flight == 32


def test_a_large_hostfile_is_read_in_linear_time() -> None:
    # 30,000 distinct hosts: a few hundredths of a second read in one pass; quadratic, several seconds.
    text = "".join(f"w-{i}.pi.ns.svc slots=1\nw-{i}.pi.ns.svc:1\n" for i in range(30_000))
    started = time.perf_counter()
    hosts = hosts_of(text)
    seconds = time.perf_counter() - started
    assert hosts == [f"w-{i}.pi.ns.svc" for i in range(30_000)]
    assert seconds < 1.5
