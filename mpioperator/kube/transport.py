"""The blocking HTTP layer: one urllib3 connection pool set up from a ClusterAccess (TLS, CA, client
certificates, proxy), our own request encoding and JSON handling (no generated models anywhere).

Requests go straight to the pool: the official client's REST layer re-encodes bodies with the standard
library, rewrites some content types on its own and inspects every header on every call, which together
cost more CPU than the request itself under a burst of writes."""

from __future__ import annotations

import functools
import math
import socket
import ssl
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import unquote, urlencode, urlsplit

import orjson
import urllib3

from mpioperator.kube import errors
from mpioperator.kube.access import ClusterAccess
from mpioperator.kube.http1 import Http1Pool, HttpError
from mpioperator.kube.protoapi import MAGIC, PROTOBUF, decode_status
from mpioperator.kube.requesthead import check_header, check_headers, check_target
from mpioperator.kube.tlsreload import ReloadingTls

CONTENT_TYPES = {
    "merge": "application/merge-patch+json",
    "strategic": "application/strategic-merge-patch+json",
    "json": "application/json-patch+json",
    "apply": "application/apply-patch+yaml",
}


# The media types the client itself sends, constants of ours: not checked again on every request.
_KNOWN_MEDIA_TYPES = frozenset(
    (*CONTENT_TYPES.values(), "application/json", PROTOBUF, f"{PROTOBUF}, application/json")
)


@dataclass(frozen=True, slots=True)
class Answer:
    status: int
    headers: dict[str, str]
    body: bytes


# How long credentials are reused. Reading them may mean reading a token file or running a plugin's
# refresh, which under load would cost more CPU than the rest of the request; tokens are rotated on a
# scale of minutes, not seconds.
AUTH_REUSE_S = 10.0

# Idle watches otherwise die silently behind proxies and load balancers: a connection idle for 30 s is
# probed, and dropped after 9 unanswered probes 15 s apart.
KEEPALIVE_IDLE_S, KEEPALIVE_INTERVAL_S, KEEPALIVE_PROBES = 30, 15, 9


class Transport:
    def __init__(
        self,
        access: ClusterAccess,
        user_agent: str,
        *,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.access = access
        check_header("User-Agent", user_agent)
        self.user_agent = user_agent
        self._manager = pool_manager(access)
        self._clock = clock
        self._auth: dict[str, str] = {}
        self._auth_read_at = -math.inf
        self._unary: Http1Pool | None = None
        # http.client and our HTTP/1.1 writer encode header values as latin-1: the UTF-8 bytes of each
        # value are carried as latin-1 characters, so the wire holds UTF-8, as client-go sends it.
        self._default_headers = [(n, v.encode().decode("latin-1")) for n, v in access.default_headers]
        self._point_at(access.host)

    @property
    def pool_size(self) -> int:
        return self.access.pool_size

    def override_host(self, host: str) -> None:
        self.access.host = host
        proxy = self.access.proxy
        self.access.choose_proxy()
        if self.access.proxy != proxy:
            self._manager.clear()
            self._manager = pool_manager(self.access)
        self._point_at(host)

    def _point_at(self, host: str) -> None:
        self.host = host.rstrip("/")
        # A server URL may carry a path (an API proxy's prefix); the pool is per scheme, host and port.
        self._prefix = urlsplit(self.host).path
        self._pool = self._manager.connection_from_url(self.host)
        if self._unary is not None:
            self._unary.close()
        self._unary = unary_pool(self.access, self.host)

    def _auth_headers(self) -> dict[str, str]:
        now = self._clock()
        if now - self._auth_read_at >= AUTH_REUSE_S:
            # Checked as read, not on every request: a token holding a newline is refused, never sent.
            self._auth, self._auth_read_at = dict(check_headers(self.access.credentials())), now
        return self._auth

    def _headers(self, content_type: str | None, accept: str | None = None) -> Mapping[str, str]:
        headers = {
            "Accept": accept or "application/json",
            "User-Agent": self.user_agent,
            **self._auth_headers(),
        }
        if accept and accept not in _KNOWN_MEDIA_TYPES:
            check_header("Accept", accept)
        if content_type:
            if content_type not in _KNOWN_MEDIA_TYPES:
                check_header("Content-Type", content_type)
            headers["Content-Type"] = content_type
        if not self._default_headers:
            return headers
        # A name may repeat (Impersonate-Group): a dict cannot hold that, urllib3's header dict can, and
        # both HTTP writers send each of its pairs as a line.
        multi = urllib3.HTTPHeaderDict(headers)
        for name, value in self._default_headers:
            multi.add(name, value)
        return multi

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
        content_type = _content_type(body, content_type)
        try:
            return self._pool.urlopen(
                method,
                check_target(f"{self._prefix}{path}{_query(query)}"),
                body=_encode(body),
                headers=self._headers(content_type, accept),
                timeout=_timeout(timeout),
                preload_content=False,
            )
        except (urllib3.exceptions.HTTPError, OSError) as exc:
            raise errors.ApiError(0, "", f"{type(exc).__name__}: {exc}") from exc

    def request(
        self,
        method: str,
        path: str,
        *,
        query: dict[str, Any] | None = None,
        body: Any = None,
        content_type: str | None = None,
        timeout: float | tuple[float, float | None] | None = None,
        accept: str | None = None,
    ) -> Answer:
        """A whole answer; on our own HTTP/1.1 pool unless the cluster is reached through a proxy."""
        if self._unary is None:
            return self._request_urllib3(
                method,
                path,
                query=query,
                body=body,
                content_type=content_type,
                timeout=timeout,
                accept=accept,
            )
        content_type = _content_type(body, content_type)
        encoded = _encode(body)
        try:
            reply = self._unary.request(
                method,
                check_target(f"{self._prefix}{path}{_query(query)}"),
                self._headers(content_type, accept),
                encoded.encode() if isinstance(encoded, str) else encoded,
                _seconds(timeout),
            )
        except HttpError as exc:
            raise errors.ApiError(0, "", str(exc)) from exc
        return Answer(reply.status, reply.headers, reply.body)

    def _request_urllib3(self, method: str, path: str, **kwargs: Any) -> Answer:
        response = self.open(method, path, **kwargs)
        try:
            data = response.data
        except (urllib3.exceptions.HTTPError, OSError) as exc:
            raise errors.ApiError(0, "", f"{type(exc).__name__}: {exc}") from exc
        finally:
            response.release_conn()
        return Answer(response.status, dict(response.headers), data)

    def close(self) -> None:
        self._manager.clear()
        if self._unary is not None:
            self._unary.close()


def unary_pool(access: ClusterAccess, host: str) -> Http1Pool | None:
    """Our own pool for whole answers from `host`, with the TLS settings urllib3 would use; None where the
    cluster is reached through a proxy, which urllib3 speaks and we do not."""
    if access.proxy:
        return None
    url = urlsplit(host)
    tls: Callable[[], ssl.SSLContext] | None = None
    if url.scheme == "https":
        # urllib3 (watches, streams) loads these files again for each new connection: so do we.
        files = [f for f in (access.ca_file, access.cert_file, access.key_file) if f]
        tls = ReloadingTls(functools.partial(tls_context, access), files)
    default_port = 443 if url.scheme == "https" else 80
    return Http1Pool(
        url.hostname or "localhost",
        url.port or default_port,
        tls=tls,
        server_hostname=access.tls_server_name or None,
        socket_options=keepalive_socket_options(),
        maxsize=access.pool_size,
    )


def tls_context(access: ClusterAccess) -> ssl.SSLContext:
    """TLS as the kubeconfig says: its CA (or the system's), its client certificate, or no verification."""
    context = ssl.create_default_context(cafile=access.ca_file, cadata=access.ca_data)
    if not access.verify:
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
    if access.cert_file:
        context.load_cert_chain(access.cert_file, access.key_file)
    context.set_alpn_protocols(["http/1.1"])
    return context


def pool_manager(access: ClusterAccess) -> urllib3.PoolManager:
    args: dict[str, Any] = {
        "cert_reqs": ssl.CERT_REQUIRED if access.verify else ssl.CERT_NONE,
        "ca_certs": access.ca_file,
        "ca_cert_data": access.ca_data,
        "cert_file": access.cert_file,
        "key_file": access.key_file,
        "maxsize": access.pool_size,
        # Retries belong to the work queue and the reflector, which know what a retry means.
        "retries": False,
        "socket_options": keepalive_socket_options(),
    }
    if access.tls_server_name:
        args["server_hostname"] = access.tls_server_name
    if not access.proxy:
        return urllib3.PoolManager(**args)
    if access.proxy.startswith("socks"):
        from urllib3.contrib.socks import SOCKSProxyManager  # needs the optional PySocks

        return SOCKSProxyManager(access.proxy, **args)
    proxy = urlsplit(access.proxy)
    if proxy.username is not None:
        # Go sends a proxy URL's user and password as Proxy-Authorization; urllib3 needs them given.
        credentials = f"{unquote(proxy.username)}:{unquote(proxy.password or '')}"
        args["proxy_headers"] = urllib3.make_headers(proxy_basic_auth=credentials)
    return urllib3.ProxyManager(access.proxy, **args)


def keepalive_socket_options() -> list[tuple[int, int, int]]:
    # urllib3 replaces its defaults (Nagle off) with the list it is given: start from them.
    options = list(urllib3.connection.HTTPConnection.default_socket_options)
    options.append((socket.SOL_SOCKET, socket.SO_KEEPALIVE, 1))
    for name, value in (
        ("TCP_KEEPIDLE", KEEPALIVE_IDLE_S),
        ("TCP_KEEPINTVL", KEEPALIVE_INTERVAL_S),
        ("TCP_KEEPCNT", KEEPALIVE_PROBES),
    ):
        if hasattr(socket, name):
            options.append((socket.IPPROTO_TCP, getattr(socket, name), value))
    return options


def _content_type(body: Any, content_type: str | None) -> str | None:
    if body is not None and content_type is None:
        content_type = "application/json"
    if content_type == CONTENT_TYPES["json"] and not isinstance(body, list):
        # Caught here, with the caller's mistake named, rather than as the server's 400.
        raise ValueError("a JSON patch body must be a list of operations")
    return content_type


def _query(query: dict[str, Any] | None) -> str:
    params = {k: v for k, v in (query or {}).items() if v is not None}
    return f"?{urlencode(params)}" if params else ""


def _encode(body: Any) -> bytes | str | None:
    # A server-side apply body is YAML, and JSON is YAML: every body can be sent as JSON.
    if body is None or isinstance(body, (bytes, str)):
        return body
    return orjson.dumps(body)


def _seconds(timeout: float | tuple[float, float | None] | None) -> float | None:
    if isinstance(timeout, tuple):
        return timeout[1] if timeout[1] is not None else timeout[0]
    return timeout


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
    except Exception:  # an error body that does not decode still gives its status and its text
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
