"""The blocking HTTP layer: the official client's configured connection pool (TLS, CA, client
certificates), with our own request encoding and JSON handling (no generated models anywhere).

Requests go straight to the pool rather than through the client's REST layer: that layer re-encodes
bodies with the standard library, rewrites some content types on its own and inspects every header on
every call, which together cost more CPU than the request itself under a burst of writes."""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlencode, urlsplit

import orjson
import urllib3
from kubernetes import client as k8s_client
from kubernetes.client import rest as k8s_rest

from mpioperator.kube import errors
from mpioperator.kube.protoapi import MAGIC, decode_status

CONTENT_TYPES = {
    "merge": "application/merge-patch+json",
    "strategic": "application/strategic-merge-patch+json",
    "json": "application/json-patch+json",
    "apply": "application/apply-patch+yaml",
}


@dataclass(frozen=True, slots=True)
class Answer:
    status: int
    headers: dict[str, str]
    body: bytes


# How long a token read from the configuration is reused. The client's refresh hook reloads the whole
# kubeconfig (or re-reads the token file) on every call, which under load cost more CPU than the rest of
# the request; tokens are rotated on a scale of minutes, not seconds.
AUTH_REUSE_S = 10.0


class Transport:
    def __init__(
        self,
        cfg: k8s_client.Configuration,
        user_agent: str,
        *,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.cfg = cfg
        self.user_agent = user_agent
        self._rest = k8s_rest.RESTClientObject(cfg)
        self._clock = clock
        self._auth: dict[str, str] = {}
        self._auth_read_at = -math.inf
        self._point_at(cfg.host)

    def override_host(self, host: str) -> None:
        self.cfg.host = host
        self._point_at(host)

    def _point_at(self, host: str) -> None:
        self.host = host.rstrip("/")
        # A server URL may carry a path (an API proxy's prefix); the pool is per scheme, host and port.
        self._prefix = urlsplit(self.host).path
        self._pool = self._rest.pool_manager.connection_from_url(self.host)

    def _auth_headers(self) -> dict[str, str]:
        now = self._clock()
        if now - self._auth_read_at >= AUTH_REUSE_S:
            auth: dict[str, str] = {}
            settings: dict[str, dict[str, Any]] = dict(self.cfg.auth_settings())  # type: ignore[arg-type]
            for setting in settings.values():
                if setting.get("in") == "header" and setting.get("value"):
                    auth[str(setting["key"])] = str(setting["value"])
            self._auth, self._auth_read_at = auth, now
        return self._auth

    def _headers(self, content_type: str | None, accept: str | None = None) -> dict[str, str]:
        headers = {
            "Accept": accept or "application/json",
            "User-Agent": self.user_agent,
            **self._auth_headers(),
        }
        if content_type:
            headers["Content-Type"] = content_type
        return headers

    def open(
        self,
        method: str,
        path: str,
        *,
        query: dict[str, Any] | None = None,
        body: Any = None,
        content_type: str | None = None,
        timeout: float | tuple[float, float | None] | None = None,
        accept: str | None = None,
    ) -> urllib3.BaseHTTPResponse:
        """Send a request and return the unread response (a stream, for watches). The answer is JSON
        unless `accept` asks for more."""
        if body is not None and content_type is None:
            content_type = "application/json"
        if content_type == CONTENT_TYPES["json"] and not isinstance(body, list):
            # Caught here, with the caller's mistake named, rather than as the server's 400.
            raise ValueError("a JSON patch body must be a list of operations")
        try:
            return self._pool.urlopen(
                method,
                f"{self._prefix}{path}{_query(query)}",
                body=_encode(body),
                headers=self._headers(content_type, accept),
                timeout=_timeout(timeout),
                preload_content=False,
            )
        except (urllib3.exceptions.HTTPError, OSError) as exc:
            raise errors.ApiError(0, "", f"{type(exc).__name__}: {exc}") from exc

    def request(self, method: str, path: str, **kwargs: Any) -> Answer:
        response = self.open(method, path, **kwargs)
        try:
            data = response.data
        except (urllib3.exceptions.HTTPError, OSError) as exc:
            raise errors.ApiError(0, "", f"{type(exc).__name__}: {exc}") from exc
        finally:
            response.release_conn()
        return Answer(response.status, dict(response.headers), data)

    def close(self) -> None:
        self._rest.pool_manager.clear()


def _query(query: dict[str, Any] | None) -> str:
    params = {k: v for k, v in (query or {}).items() if v is not None}
    return f"?{urlencode(params)}" if params else ""


def _encode(body: Any) -> bytes | str | None:
    # A server-side apply body is YAML, and JSON is YAML: every body can be sent as JSON.
    if body is None or isinstance(body, (bytes, str)):
        return body
    return orjson.dumps(body)


def _timeout(timeout: float | tuple[float, float | None] | None) -> urllib3.Timeout | None:
    if timeout is None:
        return None
    if isinstance(timeout, tuple):
        return urllib3.Timeout(connect=timeout[0], read=timeout[1])
    return urllib3.Timeout(total=timeout)


def decode(answer: Answer, loads: Callable[[bytes], dict[str, Any]] = orjson.loads) -> dict[str, Any]:
    """The JSON body of a 2xx answer, parsed by `loads`; a typed error otherwise."""
    if 200 <= answer.status < 300:
        if not answer.body:
            return {}
        return loads(answer.body)
    raise error_of(answer.status, answer.headers, answer.body)


def decode_text(answer: Answer) -> str:
    """The text body of a 2xx answer (a pod log); a typed error otherwise."""
    if 200 <= answer.status < 300:
        return answer.body.decode(errors="replace")
    raise error_of(answer.status, answer.headers, answer.body)


def error_of(status: int, headers: dict[str, str], body: bytes) -> errors.ApiError:
    try:
        # An answer to a request that accepted protobuf carries its Status as protobuf too.
        parsed = decode_status(body) if body.startswith(MAGIC) else orjson.loads(body) if body else {}
    except (ValueError, IndexError):
        parsed = {"message": body.decode(errors="replace")[:500]}
    if not isinstance(parsed, dict):
        parsed = {}
    retry_after = None
    raw = {k.lower(): v for k, v in headers.items()}.get("retry-after")
    if raw is not None:
        try:
            retry_after = float(raw)
        except ValueError:
            retry_after = None
    return errors.error_from_status(status, parsed, retry_after)
