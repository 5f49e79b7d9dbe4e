"""The HTTP layer: requests to the API server through one aiohttp session on the event loop (connections,
TLS, proxy from a ClusterAccess: kube/session.py), our own request encoding and JSON handling (no
generated models anywhere).

A unary call is bounded as a whole: its timeout runs from the first byte sent to the last byte of the
answer, and a body over MAX_BODY fails it. Nothing is retried here but what aiohttp itself retries: a
request of an idempotent method (GET, HEAD, PUT, DELETE, ...) that met a kept-alive connection the server
had just closed, before any answer; every other failure is the caller's to retry.

An answer is taken as the server sent it: a redirect is the caller's answer (never followed, so no request
and no body goes to another origin), and a body with a Content-Encoding, which we never ask for, is refused
rather than decompressed.
"""

from __future__ import annotations

import asyncio
import math
import ssl
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlencode, urlsplit

import aiohttp
import orjson
from yarl import URL

from mpioperator.kube import errors
from mpioperator.kube.access import ClusterAccess
from mpioperator.kube.protoapi import MAGIC, PROTOBUF, decode_status
from mpioperator.kube.requesthead import check_header, check_headers, check_target
from mpioperator.kube.session import new_session, probe_when_idle, reloading_tls

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

# The largest answer the operator reads is its first list of pods, served whole from the API server's
# watch cache: a few KiB a pod, some hundreds of MiB at the 150,000 pods Kubernetes supports in a cluster
# (Secrets, which can be far larger, are always listed in pages of about 16 MiB). Past 1 GiB, the
# operator Deployment's memory limit, no answer could be held and decoded anyway; the cap turns a
# runaway body into a failed call instead of growing until the process runs out of memory.
MAX_BODY = 1 << 30


@dataclass(frozen=True, slots=True)
class Answer:
    status: int
    headers: dict[str, str]
    body: bytes


class BodyTooLarge(Exception):
    """The answer's body is over MAX_BODY."""


class UnaskedEncoding(Exception):
    """The answer's body is compressed (gzip, deflate, ...), which no request of ours asks for."""


def check_encoding(response: aiohttp.ClientResponse) -> None:
    """UnaskedEncoding (the connection closed) for an answer whose body is encoded."""
    encoding = response.headers.get("Content-Encoding", "identity").strip().lower()
    if encoding not in ("", "identity"):
        response.close()
        raise UnaskedEncoding(f"the answer's body is encoded as {encoding[:40]!r}, which was not asked for")


# How long credentials are reused. Reading them may mean reading a token file or running a plugin's
# refresh, which under load would cost more CPU than the rest of the request; tokens are rotated on a
# scale of minutes, not seconds.
AUTH_REUSE_S = 10.0
# The connect deadline of a stream (a watch, a followed log), whose read deadline is its own.
STREAM_CONNECT_S = 10.0

TRANSPORT_ERRORS = (aiohttp.ClientError, OSError)  # TimeoutError and ssl.SSLError are OSErrors


def transport_error(exc: BaseException) -> errors.ApiError:
    detail = str(exc) or ("no whole answer within the timeout" if isinstance(exc, TimeoutError) else "")
    return errors.ApiError(0, "", f"{type(exc).__name__}: {detail}")


class Transport:
    """Requests over one session of at most `pool_size` connections (the access's by default). Its
    methods run on the event loop the session was made on."""

    def __init__(
        self,
        access: ClusterAccess,
        user_agent: str,
        *,
        clock: Callable[[], float] = time.monotonic,
        pool_size: int | None = None,
    ) -> None:
        self.access = access
        check_header("User-Agent", user_agent)
        self.user_agent = user_agent
        self._clock = clock
        self._pool_size = pool_size or access.pool_size
        self._auth: dict[str, str] = {}
        self._auth_read_at = -math.inf
        self._auth_reading: asyncio.Future[None] | None = None
        # Sent with every request (impersonation); aiohttp writes header values as UTF-8, as client-go.
        self._default_headers = list(access.default_headers)
        self._session: aiohttp.ClientSession | None = None
        self._timeouts: dict[float | None, aiohttp.ClientTimeout] = {}
        self._point_at(access.host)

    @property
    def pool_size(self) -> int:
        return self._pool_size

    def lane(self, pool_size: int) -> Transport:
        """A transport to the same server with the same settings and a session of its own: what it sends
        never waits for a connection this one's requests hold."""
        return Transport(self.access, self.user_agent, clock=self._clock, pool_size=pool_size)

    def override_host(self, host: str) -> None:
        self.access.host = host
        # A proxy from the environment depends on the host (NO_PROXY); a cluster's proxy-url does not.
        self.access.choose_proxy()
        self._point_at(host)

    def _point_at(self, host: str) -> None:
        self.host = host.rstrip("/")
        url = urlsplit(self.host)
        # A server URL may carry a path (an API proxy's prefix), which goes in front of every path.
        self._origin, self._prefix = f"{url.scheme}://{url.netloc}", url.path
        self._tls = reloading_tls(self.access)
        proxy = self.access.proxy or None
        if proxy is not None and not proxy.startswith(("http://", "https://")):
            # aiohttp speaks HTTP proxies only; a SOCKS one would need a package we do not ship.
            raise errors.KubeConfigError(f"proxy {proxy!r}: only http:// and https:// proxies are supported")
        self._proxy = proxy
        self._server_hostname = self.access.tls_server_name or None

    def _session_now(self) -> aiohttp.ClientSession:
        if self._session is None or self._session.closed:
            self._session = new_session(self._pool_size)
        return self._session

    def _ssl(self) -> ssl.SSLContext | bool:
        """TLS for the next request: the context that follows the access's files; True (aiohttp's default,
        unused) for plain HTTP."""
        return self._tls() if self._tls is not None else True

    async def _fresh_auth(self) -> None:
        """Credentials read again once AUTH_REUSE_S has passed, on a thread: a plugin may run a program.
        Calls arriving while they are read wait for that one read."""
        if self._clock() - self._auth_read_at < AUTH_REUSE_S:
            return
        if self._auth_reading is None:
            self._auth_reading = asyncio.ensure_future(self._read_auth())
        await asyncio.shield(self._auth_reading)

    async def _read_auth(self) -> None:
        try:
            credentials = await asyncio.to_thread(self.access.credentials)
            # Checked as read, not on every request: a token holding a newline is refused, never sent.
            self._auth, self._auth_read_at = dict(check_headers(credentials)), self._clock()
        finally:
            self._auth_reading = None

    def _headers(
        self, content_type: str | None, accept: str | None = None
    ) -> dict[str, str] | list[tuple[str, str]]:
        headers = {"Accept": accept or "application/json", "User-Agent": self.user_agent, **self._auth}
        if accept and accept not in _KNOWN_MEDIA_TYPES:
            check_header("Accept", accept)
        if content_type:
            if content_type not in _KNOWN_MEDIA_TYPES:
                check_header("Content-Type", content_type)
            headers["Content-Type"] = content_type
        if not self._default_headers:
            return headers
        # A name may repeat (Impersonate-Group): pairs, which aiohttp sends one line each.
        return [*headers.items(), *self._default_headers]

    def _url(self, path: str, query: dict[str, Any] | None) -> URL:
        # Checked, then taken as it is: yarl would otherwise parse and quote it again.
        return URL(self._origin + check_target(f"{self._prefix}{path}{_query(query)}"), encoded=True)

    def _unary_timeout(self, seconds: float | None) -> aiohttp.ClientTimeout:
        timeout = self._timeouts.get(seconds)
        if timeout is None:
            timeout = self._timeouts[seconds] = aiohttp.ClientTimeout(total=seconds, sock_connect=seconds)
        return timeout

    async def request(
        self,
        method: str,
        path: str,
        *,
        query: dict[str, Any] | None = None,
        body: Any = None,
        content_type: str | None = None,
        timeout: float | None = None,
        accept: str | None = None,
    ) -> Answer:
        """A whole answer, within `timeout` seconds from start to end. The answer is JSON unless `accept`
        asks for more."""
        content_type = _content_type(body, content_type)
        url = self._url(path, query)
        if self._clock() - self._auth_read_at >= AUTH_REUSE_S:
            await self._fresh_auth()
        headers = self._headers(content_type, accept)
        try:
            async with self._session_now().request(
                method,
                url,
                data=_encode(body),
                headers=headers,
                timeout=self._unary_timeout(timeout),
                proxy=self._proxy,
                server_hostname=self._server_hostname,
                ssl=self._ssl(),
                allow_redirects=False,
            ) as response:
                check_encoding(response)
                return Answer(response.status, header_dict(response.headers), await read_capped(response))
        except (*TRANSPORT_ERRORS, BodyTooLarge, UnaskedEncoding) as exc:
            raise transport_error(exc) from exc

    async def open(
        self,
        path: str,
        *,
        query: dict[str, Any] | None = None,
        read_timeout: float | None,
        accept: str | None = None,
    ) -> aiohttp.ClientResponse:
        """A GET whose answer is left unread, for a stream (a watch, a followed log): the caller reads it
        and must close it. `read_timeout` bounds each wait for the next bytes, not the whole."""
        url = self._url(path, query)
        if self._clock() - self._auth_read_at >= AUTH_REUSE_S:
            await self._fresh_auth()
        timeout = aiohttp.ClientTimeout(total=None, sock_connect=STREAM_CONNECT_S, sock_read=read_timeout)
        try:
            response = await self._session_now().request(
                "GET",
                url,
                headers=self._headers(None, accept),
                timeout=timeout,
                proxy=self._proxy,
                server_hostname=self._server_hostname,
                ssl=self._ssl(),
                allow_redirects=False,
            )
            check_encoding(response)
        except (*TRANSPORT_ERRORS, UnaskedEncoding) as exc:
            raise transport_error(exc) from exc
        probe_when_idle(response.connection.transport if response.connection is not None else None)
        return response

    async def close(self) -> None:
        if self._session is not None:
            await self._session.close()


async def read_capped(response: aiohttp.ClientResponse) -> bytes:
    """The whole body of `response`, or BodyTooLarge (the connection closed) once it passes MAX_BODY."""
    length = response.content_length
    if length is not None:
        if length > MAX_BODY:
            response.close()
            raise BodyTooLarge(f"the answer's body of {length} bytes is over the cap of {MAX_BODY} bytes")
        return await response.read()
    parts: list[bytes] = []
    got = 0
    content = response.content
    while data := await content.readany():
        got += len(data)
        if got > MAX_BODY:
            response.close()
            raise BodyTooLarge(f"the answer's body is over the cap of {MAX_BODY} bytes")
        parts.append(data)
    return b"".join(parts)


def header_dict(headers: Mapping[str, str]) -> dict[str, str]:
    """Answer headers as a plain dict; repeated fields joined with ", ", as urllib3 showed them."""
    out: dict[str, str] = {}
    for name, value in headers.items():
        out[name] = f"{out[name]}, {value}" if name in out else value
    return out


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


def _encode(body: Any) -> bytes | None:
    # A server-side apply body is YAML, and JSON is YAML: every body can be sent as JSON.
    if body is None or isinstance(body, bytes):
        return body
    if isinstance(body, str):
        return body.encode()
    return orjson.dumps(body)


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
