"""The operator's only door to the API server: async calls, plain dicts, typed errors, client-side QPS.

Every request and watch goes through one aiohttp session on the event loop (kube/transport.py). A lane
(`KubeClient.lane`) has a session of its own and shares the token buckets, for calls that must never wait
behind the rest (Lease renewals). Nothing here retries: retry policy belongs to the callers that know
what a retry means.
"""

from __future__ import annotations

import asyncio
import builtins
import contextlib
import os
from collections.abc import AsyncGenerator, Awaitable, Callable, Coroutine
from typing import Any, Protocol

import aiohttp

from mpioperator import __version__
from mpioperator.api.objects import Obj
from mpioperator.kube.calls import ListsAndWatches, Reads, Writes
from mpioperator.kube.config import load_configuration
from mpioperator.kube.delete_options import BACKGROUND, DeleteOptions
from mpioperator.kube.list_options import EVERYTHING, ListOptions
from mpioperator.kube.log_options import WHOLE_LOG, LogOptions
from mpioperator.kube.negotiation import Negotiation
from mpioperator.kube.pages import peek_continue, scaled_limit
from mpioperator.kube.projection import Projection
from mpioperator.kube.ratelimit import ClientLimiters
from mpioperator.kube.resources import PODS, Resource, stamp_kind, stamp_list
from mpioperator.kube.transport import CONTENT_TYPES, Answer, Transport, decode, decode_text
from mpioperator.kube.watch import stream_events, stream_frames, stream_lines

DEFAULT_USER_AGENT = f"mpi-operator/{__version__} (python)"


class RequestMetrics(Protocol):
    """Told about every request once it is answered; code 0 means no HTTP answer at all."""

    def observe(self, verb: str, resource: str, code: int, seconds: float) -> None: ...


class NoRequestMetrics:
    def observe(self, verb: str, resource: str, code: int, seconds: float) -> None:
        pass


# Methods that change nothing on the server.
READS = frozenset(("GET", "HEAD"))

# The connections of a lane: its calls (a Lease read and write) come one after another.
LANE_POOL_SIZE = 2


class KubeClient(Reads, Writes, ListsAndWatches):
    """Async verbs over one session of at most `pool_size` connections, shared by watches (one connection
    each, held for the watch's life) and unary calls.

    Lists and watches ask for protobuf where their projection knows the kind's message (kube/negotiation.py).

    Every unary call waits for a token of `qps`/`burst` from the bucket of the upstream client its API
    group belongs to (`ClientLimiters`); opening a watch takes none, as in client-go."""

    def __init__(
        self,
        transport: Transport,
        *,
        qps: float = 5.0,
        burst: int = 10,
        request_timeout: float = 30.0,
        metrics: RequestMetrics | None = None,
        limiters: ClientLimiters | None = None,
        protobuf: bool = True,
    ) -> None:
        self._t = transport
        self._limiters = limiters or ClientLimiters(qps, burst)
        self._timeout = request_timeout
        self._metrics = metrics or NoRequestMetrics()
        # Writes sent and not yet answered. A caller cancelled mid-call stops waiting, but a write already
        # on its way completes (the server may act on it whatever we do); `settled` waits for those.
        self._in_flight: set[asyncio.Task[Answer]] = set()
        self._negotiation = Negotiation(enabled=protobuf)

    # -- construction ------------------------------------------------------------------------------
    @classmethod
    def from_kubeconfig(
        cls,
        path: str | os.PathLike[str] | None = None,
        *,
        context: str | None = None,
        user_agent: str = DEFAULT_USER_AGENT,
        pool_size: int = 16,
        **opts: Any,
    ) -> KubeClient:
        access = load_configuration(kubeconfig=path, context=context, pool_size=pool_size)
        return cls(Transport(access, user_agent), **opts)

    @classmethod
    def in_cluster(
        cls, *, user_agent: str = DEFAULT_USER_AGENT, pool_size: int = 16, **opts: Any
    ) -> KubeClient:
        access = load_configuration(in_cluster=True, pool_size=pool_size)
        return cls(Transport(access, user_agent), **opts)

    @classmethod
    def explicit(
        cls,
        host: str,
        *,
        token: str | None = None,
        ca_file: str | None = None,
        user_agent: str = DEFAULT_USER_AGENT,
        pool_size: int = 16,
        **opts: Any,
    ) -> KubeClient:
        access = load_configuration(host=host, token=token, ca_file=ca_file, pool_size=pool_size)
        return cls(Transport(access, user_agent), **opts)

    def lane(
        self, name: str, *, pool_size: int = LANE_POOL_SIZE, limiters: ClientLimiters | None = None
    ) -> KubeClient:
        """A client with this one's settings and token buckets and connections of its own: what it sends
        never waits for a connection this client's calls hold. With the buckets already one per upstream
        client (`ClientLimiters`: Leases have their own), a lane's call waits for nothing of this
        client's, as client-go's leader election with its own clientset. `limiters` gives the lane buckets
        of its own instead, so its calls neither wait for this client's tokens nor spend them. `name` says
        what it is for; closing the lane leaves this client's connections open."""
        return KubeClient(
            self._t.lane(pool_size),
            limiters=limiters or self._limiters,
            request_timeout=self._timeout,
            metrics=self._metrics,
            protobuf=self._negotiation.enabled,
        )

    @property
    def request_timeout(self) -> float:
        return self._timeout

    @property
    def limiters(self) -> ClientLimiters:
        return self._limiters

    def override_host(self, host: str) -> None:
        self._t.override_host(host)

    # -- plumbing ------------------------------------------------------------------------------------
    async def _send(
        self,
        verb: str,
        res: Resource,
        method: str,
        path: str,
        *,
        query: dict[str, Any] | None = None,
        body: Any = None,
        content_type: str | None = None,
        accept: str | None = None,
    ) -> Answer:
        # Cancelled while it waits for a token, a call is never sent.
        await self._limiters.for_group(res.group).acquire()
        loop = asyncio.get_running_loop()
        started = loop.time()
        code = 0
        request = self._t.request(
            method,
            path,
            query=query,
            body=body,
            content_type=content_type,
            timeout=self._timeout,
            accept=accept,
        )
        try:
            if method in READS:
                # A read whose caller stops waiting is dropped with its connection: it changed nothing.
                answer = await request
            else:
                answer = await self._write(request)
            code = answer.status
            return answer
        finally:
            self._metrics.observe(verb, res.plural, code, loop.time() - started)

    async def _write(self, request: Coroutine[Any, Any, Answer]) -> Answer:
        """A write runs as a task of its own, shielded from its caller: a caller that stops waiting leaves
        it to finish (or fail), since the server may act on it whatever we do, and `settled` waits for
        it. (A task costs a turn of the loop, so reads are not sent this way.)"""
        call = asyncio.ensure_future(request)
        self._in_flight.add(call)
        call.add_done_callback(_settle)
        call.add_done_callback(self._in_flight.discard)
        return await asyncio.shield(call)

    # -- verbs ---------------------------------------------------------------------------------------
    async def get(self, res: Resource, name: str, namespace: str | None = None) -> Obj:
        obj = decode(await self._send("get", res, "GET", res.path(namespace, name)))
        stamp_kind(res)(obj)
        return obj

    async def list(
        self, res: Resource, namespace: str | None = None, options: ListOptions = EVERYTHING
    ) -> Obj:
        query = options.list_query()
        answer = await self._fetch_page(res, namespace, query, options.projection)
        return await self._page(res, namespace, query, options.projection, answer)

    async def list_pages(
        self, res: Resource, namespace: str | None = None, options: ListOptions = EVERYTHING
    ) -> AsyncGenerator[Obj, None]:
        """Every page of a list, in order. The next page is asked for as soon as this one's continue
        token is read, ahead of its items, so the server prepares it while this one is decoded.
        `resource_version` goes with the first page only: a continue token carries its own.

        Given `page_bytes`, `limit` is the first page's and each next page's limit is scaled from the
        size of the one before to come near `page_bytes` (at most MAX_PAGE_LIMIT): a list of large
        objects never holds many of them at once, and one of small objects still takes few requests."""
        projection, query = options.projection, options.page_query

        def fetch(token: str | None, page_limit: int | None) -> asyncio.Task[Answer]:
            return asyncio.ensure_future(
                self._fetch_page(res, namespace, query(token, page_limit), projection)
            )

        token: str | None = None
        page_limit = options.limit
        pending: asyncio.Task[Answer] | None = fetch(None, page_limit)
        try:
            while pending is not None:
                answer, this_token, this_limit = await pending, token, page_limit
                token = peek_continue(answer.body, protobuf=self._negotiation.is_protobuf(answer.headers))
                page_limit = scaled_limit(this_limit, len(answer.body), options.page_bytes)
                pending = fetch(token, page_limit) if token and 200 <= answer.status < 300 else None
                if pending is not None:
                    await asyncio.sleep(0)  # lets the fetch put its request on the wire before we decode
                page = await self._page(res, namespace, query(this_token, this_limit), projection, answer)
                if pending is None and (token := (page.get("metadata") or {}).get("continue")):
                    pending = fetch(token, page_limit)  # not read ahead: the page's own metadata has it
                yield page
        finally:
            if pending is not None:
                # Abandoned by a caller that stopped early or failed: its outcome is nobody's to report.
                pending.cancel()
                pending.add_done_callback(lambda task: task.cancelled() or task.exception())

    async def _fetch_page(
        self, res: Resource, namespace: str | None, query: dict[str, Any], projection: Projection | None
    ) -> Answer:
        accept = self._negotiation.accept(res, projection)
        return await self._send("list", res, "GET", res.path(namespace), query=query, accept=accept)

    async def _page(
        self,
        res: Resource,
        namespace: str | None,
        query: dict[str, Any],
        projection: Projection | None,
        answer: Answer,
    ) -> Obj:
        proto = self._negotiation.protobuf(res, projection)
        if proto is not None and projection is not None:
            if not (200 <= answer.status < 300 and self._negotiation.is_protobuf(answer.headers)):
                return stamp_list(res, decode(answer, projection.list))  # a JSON answer, or an error
            decoded = self._negotiation.decode_list(res, proto, answer.body)
            if decoded is not None:
                return stamp_list(res, decoded)
            # The protobuf did not decode: the same page again, as JSON (the negotiation now says so).
            answer = await self._fetch_page(res, namespace, query, projection)
        return stamp_list(res, decode(answer, projection.list) if projection is not None else decode(answer))

    async def create(self, res: Resource, body: Obj, namespace: str | None = None) -> Obj:
        ns = namespace if namespace is not None else body.get("metadata", {}).get("namespace")
        return decode(await self._send("create", res, "POST", res.path(ns), body=body))

    async def update(self, res: Resource, body: Obj, namespace: str | None = None) -> Obj:
        meta = body["metadata"]
        ns = namespace if namespace is not None else meta.get("namespace")
        return decode(await self._send("update", res, "PUT", res.path(ns, meta["name"]), body=body))

    async def update_status(self, res: Resource, body: Obj, namespace: str | None = None) -> Obj:
        meta = body["metadata"]
        ns = namespace if namespace is not None else meta.get("namespace")
        path = res.path(ns, meta["name"], "status")
        return decode(await self._send("update", res, "PUT", path, body=body))

    async def patch(
        self,
        res: Resource,
        name: str,
        body: Obj | builtins.list[Any],
        namespace: str | None = None,
        *,
        patch_type: str = "merge",
        subresource: str | None = None,
        field_manager: str | None = None,
        force: bool = False,
    ) -> Obj:
        query: dict[str, Any] = {"fieldManager": field_manager}
        if patch_type == "apply":
            query["fieldManager"] = field_manager or "mpi-operator"
            query["force"] = "true" if force else None
        path, content_type = res.path(namespace, name, subresource), CONTENT_TYPES[patch_type]
        return decode(
            await self._send("patch", res, "PATCH", path, query=query, body=body, content_type=content_type)
        )

    async def delete(
        self, res: Resource, name: str, namespace: str | None = None, options: DeleteOptions = BACKGROUND
    ) -> Obj:
        path = res.path(namespace, name)
        return decode(await self._send("delete", res, "DELETE", path, body=options.body()))

    def watch(self, res: Resource, namespace: str | None, options: ListOptions) -> AsyncGenerator[Obj, None]:
        query, read_timeout = options.watch_query(), options.read_timeout()
        accept = self._negotiation.accept(res, options.projection)
        path = res.path(namespace)

        def opening() -> Awaitable[aiohttp.ClientResponse]:
            return self._t.open(path, query=query, read_timeout=read_timeout, accept=accept)

        return self._watch(opening, res, options.projection)

    async def _watch(
        self,
        opening: Callable[[], Awaitable[aiohttp.ClientResponse]],
        res: Resource,
        projection: Projection | None,
    ) -> AsyncGenerator[Obj, None]:
        # No token: a watch is one long request, and client-go does not throttle watches either. What keeps
        # a failing watch from spinning is its caller's back-off (the reflector's, the lease watch's).
        loop = asyncio.get_running_loop()
        started = loop.time()
        code = 0
        try:
            response = await opening()
            code = response.status
        finally:
            self._metrics.observe("watch", res.plural, code, loop.time() - started)
        # aclosing: closing this generator must close the stream (and its connection) now, not at GC.
        proto = self._negotiation.protobuf(res, projection)
        if proto is not None and self._negotiation.is_protobuf(response.headers):
            decode = self._negotiation.frame_decoder(res, proto)
            stream = stream_frames(response, stamp_kind(res), decode)
        else:
            loads = projection.event if projection else None
            stream = stream_events(response, stamp_kind(res), loads)
        async with contextlib.aclosing(stream) as events:
            async for event in events:
                yield event

    async def pod_log(self, name: str, namespace: str, options: LogOptions = WHOLE_LOG) -> str:
        """A pod's log as the kubelet has it now (the API server relays it as text, not JSON); undecodable
        bytes are replaced, never raised on."""
        query = options.query()
        return decode_text(
            await self._send("get", PODS, "GET", PODS.path(namespace, name, "log"), query=query)
        )

    def follow_pod_log(
        self, name: str, namespace: str, *, container: str | None = None
    ) -> AsyncGenerator[str, None]:
        """A pod's log line by line as it is written, until its container ends (`kubectl logs -f`). Like a
        watch it holds a connection and takes no token; it has no read deadline, since a program may stay
        silent for as long as it likes."""
        query = {"container": container, "follow": "true"}
        path = PODS.path(namespace, name, "log")
        return self._follow(lambda: self._t.open(path, query=query, read_timeout=None))

    async def _follow(
        self, opening: Callable[[], Awaitable[aiohttp.ClientResponse]]
    ) -> AsyncGenerator[str, None]:
        response = await opening()
        async with contextlib.aclosing(stream_lines(response)) as lines:
            async for line in lines:
                yield line

    async def settled(self, timeout: float | None = None) -> bool:
        """Wait until every write sent so far has been answered (or has failed); False if `timeout` seconds
        pass first. After a caller was cancelled this is when its writes are really over."""
        pending = list(self._in_flight)
        if not pending:
            return True
        _, still = await asyncio.wait(pending, timeout=timeout)
        return not still

    async def close(self) -> None:
        for call in list(self._in_flight):
            call.cancel()
        await self._t.close()


def _settle(call: asyncio.Task[Answer]) -> None:
    """Takes a finished call's failure: when its caller was cancelled nobody else reads it, and asyncio
    would log it as "Task exception was never retrieved" with its traceback."""
    if not call.cancelled():
        call.exception()
