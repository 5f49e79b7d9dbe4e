"""/healthz, /readyz and /metrics over a minimal asyncio HTTP server.

Checks are named callables returning None when healthy or a failure message, mirroring the apiserver healthz
handlers upstream uses: `/healthz` aggregates, `/healthz/<name>` runs one check.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable

from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest

Check = Callable[[], str | None]


class HealthServer:
    def __init__(
        self,
        *,
        host: str = "0.0.0.0",
        port: int,
        registry: CollectorRegistry | None,
        serve_metrics: bool,
    ):
        self.host = host
        self.port = port
        self._registry = registry
        self._serve_metrics = serve_metrics and registry is not None
        self._health: dict[str, Check] = {}
        self._ready: dict[str, Check] = {}
        self._server: asyncio.Server | None = None

    def add_health_check(self, name: str, check: Check) -> None:
        self._health[name] = check

    def add_ready_check(self, name: str, check: Check) -> None:
        self._ready[name] = check

    async def start(self) -> None:
        self._server = await asyncio.start_server(self._handle, self.host, self.port)
        self.port = self._server.sockets[0].getsockname()[1]

    async def stop(self) -> None:
        if self._server is not None:
            self._server.close()
            with contextlib.suppress(Exception):
                await self._server.wait_closed()
            self._server = None

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
        return 404, "text/plain; charset=utf-8", b"404 page not found\n"

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            request_line = await asyncio.wait_for(reader.readline(), timeout=10)
            while (await asyncio.wait_for(reader.readline(), timeout=10)) not in (b"\r\n", b"\n", b""):
                pass
            parts = request_line.decode("latin-1").split()
            if len(parts) < 2 or parts[0] not in ("GET", "HEAD"):
                status, ctype, body = 405, "text/plain; charset=utf-8", b"method not allowed\n"
            else:
                status, ctype, body = self.respond(parts[1])
            reason = {200: "OK", 404: "Not Found", 405: "Method Not Allowed", 500: "Internal Server Error"}
            head = (
                f"HTTP/1.1 {status} {reason.get(status, 'Error')}\r\n"
                f"Content-Type: {ctype}\r\nContent-Length: {len(body)}\r\nConnection: close\r\n\r\n"
            )
            writer.write(head.encode("latin-1") + (body if parts and parts[0] != "HEAD" else b""))
            await writer.drain()
        except (TimeoutError, ConnectionError):
            pass
        finally:
            writer.close()
            with contextlib.suppress(Exception):
                await writer.wait_closed()


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
        return 500, "text/plain; charset=utf-8", ("\n".join(failures) + "\nhealthz check failed\n").encode()
    return 200, "text/plain; charset=utf-8", b"ok"
