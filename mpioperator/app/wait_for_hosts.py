"""`mpi-operator wait-for-hosts`: the launcher's init container, which returns once every host of the
hostfile resolves and accepts TCP connections on the ssh port (docs/extensions.md).

mpirun gives up on a worker whose name does not resolve yet (Hydra at once) or whose sshd does not listen
yet (ssh's few connection attempts), and the launcher is restarted, counting against `backoffLimit`. Run
before the launcher's own container, this waits instead, in the operator's image, so it needs nothing of
the user's. The launcher's own name (in the hostfile under `runLauncherAsWorker`) only has to resolve:
its sshd, if it has one, cannot run before this container ends, and mpirun starts its local ranks itself.

The standard library only, and the constants it shares with the operator: the subcommand is dispatched
before the operator's own imports, so the container starts fast and small.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import socket
import sys
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from mpioperator.api.extensions.host_wait import EXIT_DEADLINE, MESSAGE_PREFIX, SUBCOMMAND

EXIT_USAGE = 2
TERMINATION_LOG = "/dev/termination-log"
CONNECT_TIMEOUT = 2.0
PROGRESS_EVERY = 10.0
# The kubelet keeps at most 4 KiB of a termination message, the operator's pod cache its last 1 KiB.
MESSAGE_LIMIT = 1000


# A host not reached is checked again after 1 s, then 2 s, 4 s, ... up to this: a job of many workers
# whose names resolve late must not send the cluster's DNS a lookup per worker every second.
MAX_RECHECK_SECONDS = 5.0
# How many hosts are looked up and connected to at once.
MAX_CONCURRENT_CHECKS = 32


def hosts_of(hostfile: str) -> list[str]:
    """The hosts of a hostfile in Open MPI's (`host slots=n`) or Hydra's (`host:n`) form, in order, once."""
    hosts: dict[str, None] = {}  # ordered, and a membership test that does not grow with the file
    for line in hostfile.splitlines():
        words = line.split("#", 1)[0].split()
        if not words:
            continue
        host = words[0].split(":", 1)[0]
        if host:
            hosts[host] = None
    return list(hosts)


Resolve = Callable[[str, int], Awaitable[list[tuple[str, int]]]]
Connect = Callable[[tuple[str, int], float], Awaitable[None]]


async def resolve(host: str, port: int) -> list[tuple[str, int]]:
    """The host's TCP addresses; raises OSError (socket.gaierror) while the name does not resolve."""
    found = await asyncio.get_running_loop().getaddrinfo(host, port, type=socket.SOCK_STREAM)
    return [(str(address[4][0]), int(address[4][1])) for address in found]


async def connect(address: tuple[str, int], timeout: float) -> None:
    """Opens a TCP connection and closes it: nothing is sent or read. Failures are OSErrors whose
    strerror is the system's words for the errno ("Connection refused"): asyncio puts the address there."""
    try:
        _, writer = await asyncio.wait_for(asyncio.open_connection(*address), timeout)
    except TimeoutError as error:
        raise OSError(f"no answer within {timeout:g}s") from error
    except OSError as error:
        if error.errno is None:
            raise
        raise OSError(error.errno, os.strerror(error.errno)) from error
    writer.close()
    with contextlib.suppress(OSError):
        await writer.wait_closed()


@dataclass
class Waiter:
    """Checks each host until it answers once; a host that answered is not checked again. One not reached
    is checked again after a wait that doubles each time, up to MAX_RECHECK_SECONDS; the hosts due in a
    round are checked MAX_CONCURRENT_CHECKS at a time."""

    hosts: list[str]
    port: int
    own_hostname: str
    resolve: Resolve = resolve
    connect: Connect = connect
    reached: set[str] = field(default_factory=set)
    why: dict[str, str] = field(default_factory=dict)  # host -> what held it at the last check
    first_recheck: float = 1.0
    # host -> (when it is next due, the wait after that check if it fails again); absent: due now
    _due: dict[str, tuple[float, float]] = field(default_factory=dict, init=False, repr=False)

    def _is_own(self, host: str) -> bool:
        return host.split(".", 1)[0] == self.own_hostname.split(".", 1)[0]

    async def _check(self, host: str) -> str | None:
        """None once the host can be reached, else what holds it."""
        try:
            addresses = await self.resolve(host, self.port)
        except OSError:
            return "does not resolve"
        if self._is_own(host):
            return None
        problem = "no address"
        for address in addresses:
            try:
                await self.connect(address, CONNECT_TIMEOUT)
                return None
            except OSError as error:
                problem = f"port {self.port}: {error.strerror or error}"
        return problem

    async def _round(self, now: float) -> None:
        due = [
            host
            for host in self.hosts
            if host not in self.reached and self._due.get(host, (now, 0.0))[0] <= now
        ]
        limit = asyncio.Semaphore(MAX_CONCURRENT_CHECKS)

        async def check_one(host: str) -> str | None:
            async with limit:
                return await self._check(host)

        problems = await asyncio.gather(*(check_one(host) for host in due))
        for host, problem in zip(due, problems, strict=True):
            if problem is None:
                self.reached.add(host)
                self.why.pop(host, None)
                self._due.pop(host, None)
            else:
                self.why[host] = problem
                wait = self._due.get(host, (now, self.first_recheck))[1]
                self._due[host] = (now + wait, min(wait * 2, MAX_RECHECK_SECONDS))

    def check(self, now: float | None = None) -> list[str]:
        """Checks the hosts not reached yet that are due at `now` (the monotonic clock's); returns those
        that are still not reachable, in order."""
        asyncio.run(self._round(time.monotonic() if now is None else now))
        return [host for host in self.hosts if host not in self.reached]

    def next_due(self) -> float | None:
        """When the next host not reached is due to be checked again; None if none is waiting."""
        waiting = [
            self._due[host][0] for host in self.hosts if host not in self.reached and host in self._due
        ]
        return min(waiting, default=None)

    def describe(self, hosts: Sequence[str]) -> str:
        return ", ".join(f"{host} ({self.why.get(host, 'not checked')})" for host in hosts)


def _parse(argv: Sequence[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog=f"mpi-operator {SUBCOMMAND}",
        description="Wait until every host of a hostfile resolves and accepts TCP connections on a port.",
    )
    parser.add_argument("--hostfile", default="/etc/mpi/hostfile")
    parser.add_argument("--port", type=int, required=True, help="the workers' ssh port")
    parser.add_argument(
        "--deadline-seconds", type=int, default=0, help="give up after this long (exit 3); 0: never"
    )
    parser.add_argument("--interval", type=float, default=1.0, help="seconds between rounds")
    return parser.parse_args(list(argv))


def _say(text: str) -> None:
    print(f"{MESSAGE_PREFIX}{text}", flush=True)


def run(
    argv: Sequence[str],
    *,
    waiter_for: Callable[[list[str], int], Waiter] | None = None,
    monotonic: Callable[[], float] = time.monotonic,
    sleep: Callable[[float], None] = time.sleep,
    termination_log: str = TERMINATION_LOG,
) -> int:
    args = _parse(argv)
    if not 0 < args.port < 65536 or args.deadline_seconds < 0 or args.interval <= 0:
        print(f"{SUBCOMMAND}: bad --port, --deadline-seconds or --interval", file=sys.stderr)
        return EXIT_USAGE
    try:
        hosts = hosts_of(Path(args.hostfile).read_text())
    except OSError as error:
        print(f"{SUBCOMMAND}: cannot read {args.hostfile}: {error}", file=sys.stderr)
        return EXIT_USAGE
    make = waiter_for or (lambda names, port: Waiter(names, port, socket.gethostname()))
    waiter = make(hosts, args.port)
    started = monotonic()
    told = started
    _say(f"waiting for {len(hosts)} host(s) on port {args.port}")
    while True:
        still = waiter.check(monotonic())
        elapsed = monotonic() - started
        if not still:
            _say(f"all {len(hosts)} host(s) reachable after {elapsed:.1f}s")
            return 0
        if args.deadline_seconds and elapsed >= args.deadline_seconds:
            message = (
                f"{len(still)} of {len(hosts)} hosts not reachable within {args.deadline_seconds}s: "
                f"{waiter.describe(still)}"
            )
            _say(message)
            _write_termination_message(termination_log, f"{MESSAGE_PREFIX}{message}")
            return EXIT_DEADLINE
        if monotonic() - told >= PROGRESS_EVERY:
            told = monotonic()
            _say(f"after {elapsed:.0f}s still waiting for {waiter.describe(still)}")
        # Until the next host is due, at least --interval; never past the deadline.
        due = waiter.next_due()
        pause = max(args.interval, due - monotonic()) if due is not None else args.interval
        if args.deadline_seconds:
            pause = max(min(pause, started + args.deadline_seconds - monotonic()), 0.0)
        sleep(pause)


def _write_termination_message(path: str, message: str) -> None:
    encoded = message.encode()[:MESSAGE_LIMIT]
    # Outside a pod (no termination log) the message is in the log above.
    with contextlib.suppress(OSError):
        Path(path).write_bytes(encoded)


def main(argv: Sequence[str]) -> int:
    return run(argv)
