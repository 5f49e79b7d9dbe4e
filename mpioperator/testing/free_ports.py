"""Loopback ports picked at run time, so parallel clusters never clash."""

from __future__ import annotations

import contextlib
import socket
from collections.abc import Callable
from typing import TypeVar

from mpioperator.testing.wait import ProbeAborted

T = TypeVar("T")


def free_port() -> int:
    return free_ports(1)[0]


def free_ports(count: int) -> list[int]:
    """`count` distinct free ports. Each socket stays bound until all are picked: a port free_port()
    has just released can be handed out again at once, so two calls in a row may return the same one."""
    with contextlib.ExitStack() as held:
        ports: list[int] = []
        for _ in range(count):
            sock = held.enter_context(socket.socket(socket.AF_INET, socket.SOCK_STREAM))
            sock.bind(("127.0.0.1", 0))
            port: int = sock.getsockname()[1]
            ports.append(port)
        return ports


def port_in_use(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.settimeout(0.2)
        return sock.connect_ex(("127.0.0.1", port)) == 0


# How many times a process is started in all when the port free_port() picked for it keeps being taken.
PORT_ATTEMPTS = 3


def start_on_free_ports(
    start_once: Callable[[], T],
    *,
    lost_race: Callable[[ProbeAborted], bool] = lambda exc: True,
    attempts: int = PORT_ATTEMPTS,
) -> T:
    """`start_once()`, which picks its ports with free_port() and raises ProbeAborted (with the process's
    log tail) when its process exits at start, called again while `lost_race` says the exit was a port
    taken meanwhile: free_port() only finds a port free, and another socket (an outgoing connection takes
    its port from the same range) can bind it before the process does."""
    for attempt in range(1, attempts + 1):
        try:
            return start_once()
        except ProbeAborted as exc:
            if attempt == attempts or not lost_race(exc):
                raise
    raise AssertionError("unreachable")
