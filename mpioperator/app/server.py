"""/healthz, /readyz and /metrics over aiohttp's low-level web server.

Checks are named callables returning None when healthy or a failure message, mirroring the apiserver healthz
handlers upstream uses: `/healthz` aggregates, `/healthz/<name>` runs one check. aiohttp parses the requests
(a request line or header too long is its 400, not our exception); checks run on the event loop, as the
state they read is the loop's.
"""

from __future__ import annotations

import logging
import socket
from collections.abc import Callable
from typing import Any

from aiohttp import web
from aiohttp.http_exceptions import HttpProcessingError
from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest

Check = Callable[[], str | None]

_TEXT = "text/plain; charset=utf-8"
# A connection that has not sent a whole request this long after it opened or after its last answer
# is closed: probes and scrapes send theirs at once, and a client that sends nothing or trickles its
# request line must not hold a socket (and the file descriptor) for good.
IDLE_SECONDS = 15.0


def listening_socket(port: int) -> socket.socket:
    """A socket on every address of the host: IPv6 and IPv4 on one port where the kernel has IPv6 (so
    IPv6-only and dual-stack clusters reach it), IPv4 alone where it has not."""
    if socket.has_dualstack_ipv6():
        return socket.create_server(("::", port), family=socket.AF_INET6, dualstack_ipv6=True)
    return socket.create_server(("", port))


class _RequestLog(logging.LoggerAdapter[logging.Logger]):
    """aiohttp's server log, where a request it could not parse (a port scan, TLS or another protocol
    sent to the port, a line too long) is one warning line: the client's mistake, so no traceback and no
    error. Anything else keeps aiohttp's error and traceback."""

    def exception(self, msg: object, *args: object, exc_info: Any = True, **kwargs: Any) -> None:
        if isinstance(exc_info, HttpProcessingError):
            # aiohttp's message names the client: "Error handling request from %s".
            client = args[0] if args else "an unknown client"
            reason = next((line.strip() for line in exc_info.message.splitlines() if line.strip()), "")
            self.warning("bad request from %s: %s", client, (reason or type(exc_info).__name__)[:200])
            return
        super().exception(msg, *args, exc_info=exc_info, **kwargs)


_REQUEST_LOG = _RequestLog(logging.getLogger("aiohttp.server"))


class HealthServer:
    def __init__(
        self,
        *,
        host: str | None = None,
        port: int,
        registry: CollectorRegistry | None,
        serve_metrics: bool,
        idle_seconds: float = IDLE_SECONDS,
    ):
        """`host` None listens on every address, IPv4 and IPv6; a name or address listens there only."""
        self._idle_seconds = idle_seconds
        self.host = host
        self.port = port
        self._registry = registry
        self._serve_metrics = serve_metrics and registry is not None
        self._health: dict[str, Check] = {}
        self._ready: dict[str, Check] = {}
        self._runner: web.ServerRunner | None = None

    def add_health_check(self, name: str, check: Check) -> None:
        self._health[name] = check

    def add_ready_check(self, name: str, check: Check) -> None:
        self._ready[name] = check

    async def start(self) -> None:
        # The connection settings belong to the Server: a ServerRunner ignores those given to it.
        server = web.Server(
            self._handle, access_log=None, keepalive_timeout=self._idle_seconds, logger=_REQUEST_LOG
        )
        runner = web.ServerRunner(server)
        await runner.setup()
        site: web.BaseSite
        if self.host is None:
            site = web.SockSite(runner, listening_socket(self.port))
        else:
            site = web.TCPSite(runner, self.host, self.port)
        try:
            await site.start()
        except BaseException:
            await runner.cleanup()
            raise
        self._runner = runner
        self.port = runner.addresses[0][1]

    async def stop(self) -> None:
        if self._runner is not None:
            runner, self._runner = self._runner, None
            await runner.cleanup()

    def respond(self, path: str) -> tuple[int, str, bytes]:
        """Status, content type and body for a GET of `path` (pure apart from running the checks)."""
        path = path.split("?", 1)[0].rstrip("/") or "/"
        if path == "/metrics" and self._serve_metrics and self._registry is not None:
            return 200, CONTENT_TYPE_LATEST, generate_latest(self._registry)
        for prefix, checks in (
            ("/healthz", self._health),
            ("/readyz", self._ready),
            ("/livez", self._health),
        ):
            if path == prefix:
                return _aggregate(checks)
            if path.startswith(prefix + "/"):
                name = path[len(prefix) + 1 :]
                if name in checks:
                    return _aggregate({name: checks[name]})
        return 404, _TEXT, b"404 page not found\n"

    async def _handle(self, request: web.BaseRequest) -> web.Response:
        if request.method not in ("GET", "HEAD"):
            status, ctype, body = 405, _TEXT, b"method not allowed\n"
        else:
            status, ctype, body = self.respond(request.raw_path)
        # aiohttp leaves the body out of an answer to HEAD and keeps its Content-Length.
        return web.Response(status=status, body=body, headers={"Content-Type": ctype})


def _aggregate(checks: dict[str, Check]) -> tuple[int, str, bytes]:
    failures = []
    for name, check in sorted(checks.items()):
        try:
            problem = check()
        except Exception as exc:  # a crashing check is a failing check, never a crashed server
            problem = f"check raised {type(exc).__name__}: {exc}"
        if problem:
            failures.append(f"[-]{name} failed: {problem}")
    if failures:
        return 500, _TEXT, ("\n".join(failures) + "\nhealthz check failed\n").encode()
    return 200, _TEXT, b"ok"
