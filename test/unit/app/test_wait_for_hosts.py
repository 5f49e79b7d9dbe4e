"""The launcher's wait-for-hosts: it returns once every host of the hostfile resolves and accepts
connections on the port, and gives up at the deadline with exit code 3 and a message naming the hosts."""

from __future__ import annotations

import asyncio
import socket
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from mpioperator.api.extensions.host_wait import EXIT_DEADLINE
from mpioperator.app.wait_for_hosts import Waiter, connect, hosts_of, run

W0 = "pi-worker-0.pi.ns.svc"
W1 = "pi-worker-1.pi.ns.svc"
LAUNCHER = "pi-launcher.pi.ns.svc"


class Clock:
    """Time moves only when the waiter sleeps."""

    def __init__(self) -> None:
        self.now = 0.0
        self.sleeps = 0

    def monotonic(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.now += seconds
        self.sleeps += 1


class Network:
    """Names that resolve and ports that listen from a given round (the waiter's sleep count) on."""

    def __init__(self, clock: Clock, *, resolves_from: dict[str, int], listens_from: dict[str, int]) -> None:
        self.clock = clock
        self.resolves_from = resolves_from
        self.listens_from = listens_from
        self.connected: list[str] = []

    async def resolve(self, host: str, port: int) -> list[tuple[str, int]]:
        if self.clock.sleeps < self.resolves_from.get(host, 0):
            raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")
        return [(host, port)]

    async def connect(self, address: tuple[str, int], timeout: float) -> None:
        host = address[0]
        self.connected.append(host)
        if self.clock.sleeps < self.listens_from.get(host, 0):
            raise ConnectionRefusedError(111, "Connection refused")


def _hostfile(tmp_path: Path, *hosts: str) -> Path:
    path = tmp_path / "hostfile"
    path.write_text("".join(f"{host} slots=1\n" for host in hosts))
    return path


def _run(
    tmp_path: Path, network: Network, *hosts: str, deadline: int = 0, own: str = "pi-launcher"
) -> tuple[int, Path]:
    log = tmp_path / "termination-log"
    code = run(
        [f"--hostfile={_hostfile(tmp_path, *hosts)}", "--port=2222", f"--deadline-seconds={deadline}"],
        waiter_for=lambda names, port: Waiter(names, port, own, network.resolve, network.connect),
        monotonic=network.clock.monotonic,
        sleep=network.clock.sleep,
        termination_log=str(log),
    )
    return code, log


def test_a_host_that_resolves_late_is_waited_for(tmp_path: Path) -> None:
    clock = Clock()
    network = Network(clock, resolves_from={W1: 4}, listens_from={})

    code, log = _run(tmp_path, network, W0, W1)

    assert code == 0
    assert clock.sleeps == 4
    assert not log.exists()


def test_a_port_that_opens_late_is_waited_for_and_a_reached_host_is_not_checked_again(tmp_path: Path) -> None:
    clock = Clock()
    network = Network(clock, resolves_from={}, listens_from={W0: 6})

    code, _ = _run(tmp_path, network, W0, W1)

    assert code == 0
    assert clock.sleeps == 6
    assert network.connected.count(W1) == 1
    assert network.connected.count(W0) == 7


def test_past_the_deadline_it_exits_3_naming_each_host_and_what_held_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    clock = Clock()
    network = Network(clock, resolves_from={W1: 1000}, listens_from={W0: 1000})

    code, log = _run(tmp_path, network, W0, W1, LAUNCHER, deadline=20)

    assert code == EXIT_DEADLINE == 3
    assert clock.now == 20
    message = log.read_text()
    assert message == (
        f"wait-for-hosts: 2 of 3 hosts not reachable within 20s: {W0} (port 2222: Connection refused), "
        f"{W1} (does not resolve)"
    )
    assert message in capsys.readouterr().out


def test_the_launchers_own_name_only_has_to_resolve(tmp_path: Path) -> None:
    """Under runLauncherAsWorker the hostfile names the launcher, whose sshd cannot run before its init
    containers end: mpirun starts local ranks itself, so resolving is all it needs."""
    clock = Clock()
    network = Network(clock, resolves_from={LAUNCHER: 2}, listens_from={LAUNCHER: 1000})

    code, _ = _run(tmp_path, network, LAUNCHER, W0, own="pi-launcher")

    assert code == 0
    assert clock.sleeps == 2
    assert LAUNCHER not in network.connected


def test_without_a_deadline_it_waits_as_long_as_it_takes(tmp_path: Path) -> None:
    clock = Clock()
    network = Network(clock, resolves_from={}, listens_from={W0: 500})

    code, _ = _run(tmp_path, network, W0)

    assert code == 0
    assert clock.sleeps == 500


@pytest.mark.parametrize(
    ("text", "hosts"),
    [
        (f"{W0} slots=2\n{W1} slots=2\n", [W0, W1]),
        (f"{W0}:2\n{W1}:2\n", [W0, W1]),
        (f"\n# a comment\n{W0}\n{W0} slots=1\n", [W0]),
    ],
)
def test_hosts_are_read_from_open_mpi_and_hydra_hostfiles(text: str, hosts: list[str]) -> None:
    assert hosts_of(text) == hosts


def test_a_missing_hostfile_or_bad_port_is_a_usage_error(tmp_path: Path) -> None:
    assert run([f"--hostfile={tmp_path / 'none'}", "--port=22"]) == 2
    assert run([f"--hostfile={_hostfile(tmp_path, W0)}", "--port=70000"]) == 2


@pytest.fixture
def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def test_real_sockets_a_port_that_starts_listening_while_it_waits(tmp_path: Path, free_port: int) -> None:
    """The real resolver and connect: localhost's port refuses until a listener opens it mid-wait."""
    server = socket.socket()
    server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    rounds: list[int] = []
    opened = threading.Event()
    clock = Clock()  # time as the waiter sees it: a host not reached is due again only once it has passed

    def sleep(seconds: float) -> None:
        clock.sleep(seconds)
        rounds.append(1)
        if len(rounds) == 3:
            server.bind(("127.0.0.1", free_port))
            server.listen()
            opened.set()

    try:
        code = run(
            [
                f"--hostfile={_hostfile(tmp_path, '127.0.0.1')}",
                f"--port={free_port}",
                "--deadline-seconds=600",
            ],
            waiter_for=lambda names, port: Waiter(names, port, "not-this-host"),
            monotonic=clock.monotonic,
            sleep=sleep,
            termination_log=str(tmp_path / "log"),
        )
    finally:
        server.close()

    assert opened.is_set()
    assert code == 0
    assert len(rounds) == 3


def test_the_subcommand_is_told_apart_before_the_operator_is_imported() -> None:
    probe = (
        "import sys; sys.argv = ['mpi-operator', 'wait-for-hosts', '--help'];"
        "from mpioperator.app.entry import main\n"
        "try:\n    main()\nexcept SystemExit:\n    pass\n"
        "print('mpioperator.app.main' in sys.modules, 'aiohttp' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout
    assert out.strip().splitlines()[-1] == "False False"


def test_the_hosts_of_a_round_are_checked_at_once() -> None:
    """A round costs one connect timeout, not one per host that does not answer."""
    in_flight: list[int] = [0]
    most: list[int] = [0]

    async def resolve(host: str, port: int) -> list[tuple[str, int]]:
        return [(host, port)]

    async def connect(address: tuple[str, int], timeout: float) -> None:
        in_flight[0] += 1
        most[0] = max(most[0], in_flight[0])
        await asyncio.sleep(0)
        in_flight[0] -= 1
        raise ConnectionRefusedError(111, "Connection refused")

    hosts = [f"pi-worker-{i}.pi.ns.svc" for i in range(5)]
    waiter = Waiter(hosts, 2222, "pi-launcher", resolve, connect)

    assert waiter.check() == hosts
    assert most[0] == 5


def test_a_connect_that_gets_no_answer_in_time_is_an_os_error_naming_the_timeout(free_port: int) -> None:
    with pytest.raises(OSError, match="no answer within 0s"):
        asyncio.run(connect(("127.0.0.1", free_port), 0))


def test_a_refused_connect_is_named_in_the_systems_words_without_the_address() -> None:
    with socket.socket() as closed:
        closed.bind(("127.0.0.1", 0))
        port = closed.getsockname()[1]
    waiter = Waiter(["127.0.0.1"], port, "pi-launcher")

    assert waiter.check() == ["127.0.0.1"]
    assert waiter.describe(["127.0.0.1"]) == f"127.0.0.1 (port {port}: Connection refused)"
