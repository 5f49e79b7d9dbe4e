"""core/v1 Events about MPIJobs, recorded without blocking a sync and aggregated when repeated.

A sync only enqueues; one sender task writes in order. A repeat of the same (object, type, reason,
message) patches the existing Event's count and lastTimestamp instead of creating another, the way
client-go's correlator does, so a job stuck in a loop cannot flood etcd.

Every field upstream's tests compare is upstream's: the source and reporting component are the
component's name, and the host and reporting instance are empty (client-go's recorder is given no host
by upstream and copies the empty one), so tools that match Events on those fields see no difference.
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime as dt
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

import structlog

from mpioperator.controller.conditions import format_time
from mpioperator.kube import errors
from mpioperator.kube.resources import EVENTS, Resource

NORMAL = "Normal"
WARNING = "Warning"

_MAX_MESSAGE_BYTES = 1024
MAX_QUEUED_EVENTS = 1000
_REMEMBERED_EVENTS = 4096

log = structlog.get_logger(__name__)


class EventWriter(Protocol):
    async def create(
        self, res: Resource, body: dict[str, Any], namespace: str | None = None
    ) -> dict[str, Any]: ...

    async def patch(
        self,
        res: Resource,
        name: str,
        body: dict[str, Any] | list[Any],
        namespace: str | None = None,
        *,
        patch_type: str = "merge",
        subresource: str | None = None,
        field_manager: str | None = None,
        force: bool = False,
    ) -> dict[str, Any]: ...


@dataclass(frozen=True, slots=True)
class EventKey:
    uid: str
    type: str
    reason: str
    message: str


@dataclass(slots=True)
class _Seen:
    name: str
    namespace: str
    count: int


@dataclass(frozen=True, slots=True)
class _Pending:
    key: EventKey
    involved: dict[str, Any]
    timestamp: str


def truncate_message(message: str, limit: int = _MAX_MESSAGE_BYTES) -> str:
    """Keep messages within `limit` UTF-8 bytes, ending in '...' when cut (as upstream does)."""
    raw = message.encode()
    if len(raw) <= limit:
        return message
    return raw[: limit - 3].decode(errors="ignore") + "..."


def involved_object(obj: dict[str, Any], kind: str, api_version: str) -> dict[str, Any]:
    meta = obj.get("metadata", {})
    ref = {
        "kind": obj.get("kind") or kind,
        "namespace": meta.get("namespace", ""),
        "name": meta.get("name", ""),
        "uid": meta.get("uid", ""),
        "apiVersion": obj.get("apiVersion") or api_version,
        "resourceVersion": meta.get("resourceVersion", ""),
    }
    return {k: v for k, v in ref.items() if v}


def new_event(
    involved: dict[str, Any],
    key: EventKey,
    *,
    timestamp: str,
    component: str,
    unique: str,
    host: str = "",
) -> dict[str, Any]:
    """The Event a first occurrence creates; `unique` makes the name distinct like client-go's suffix."""
    return {
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": {
            "name": f"{involved.get('name', '')}.{unique}",
            "namespace": involved.get("namespace", ""),
        },
        "involvedObject": involved,
        "reason": key.reason,
        "message": key.message,
        "type": key.type,
        "source": {"component": component, **({"host": host} if host else {})},
        "firstTimestamp": timestamp,
        "lastTimestamp": timestamp,
        "count": 1,
        "reportingComponent": component,
        "reportingInstance": host,
    }


class EventRecorder:
    """Records Events for one component; `record` never blocks and never raises."""

    def __init__(
        self,
        writer: EventWriter,
        *,
        component: str,
        kind: str,
        api_version: str,
        utcnow: Callable[[], dt.datetime],
        host: str = "",
    ) -> None:
        self._writer = writer
        self._component = component
        self._kind = kind
        self._api_version = api_version
        self._utcnow = utcnow
        self._host = host
        # Bounded, as client-go's broadcaster (1000 queued events, then dropped): `record` is called from
        # a sync, which must never wait on an Event, so past the bound an Event is dropped, not queued.
        self._queue: asyncio.Queue[_Pending | None] = asyncio.Queue(maxsize=MAX_QUEUED_EVENTS)
        self._seen: OrderedDict[EventKey, _Seen] = OrderedDict()
        self._sender: asyncio.Task[None] | None = None
        self._sequence = 0
        self._closed = False
        self.dropped = 0

    def start(self) -> None:
        """Run the sender as a task of its own, for callers that do not run `run` in a task group."""
        if self._sender is None:
            self._sender = asyncio.get_running_loop().create_task(self.run(), name="event-sender")

    def record(self, obj: dict[str, Any], event_type: str, reason: str, message: str) -> None:
        message = truncate_message(message)
        involved = involved_object(obj, self._kind, self._api_version)
        key = EventKey(involved.get("uid", ""), event_type, reason, message)
        where = f"{involved.get('namespace', '')}/{involved.get('name', '')}"
        log.info("event", object=where, type=event_type, reason=reason, message=message)
        if self._closed:
            self.dropped += 1
            log.debug("event not sent: the recorder has stopped", object=where, reason=reason)
            return
        try:
            self._queue.put_nowait(_Pending(key, involved, format_time(self._utcnow())))
        except asyncio.QueueFull:
            self.dropped += 1
            log.warning("event dropped: too many waiting to be sent", object=where, reason=reason)

    async def flush(self) -> None:
        """Wait until everything recorded so far has been written (or given up on)."""
        await self._queue.join()

    def close(self) -> None:
        """Let `run` end once what is queued has been sent; what is recorded from now on is dropped."""
        if not self._closed:
            self._closed = True
            with contextlib.suppress(asyncio.QueueFull):  # a full queue wakes `run` anyway
                self._queue.put_nowait(None)

    async def stop(self) -> None:
        self.close()
        if self._sender is None:
            return
        with contextlib.suppress(asyncio.CancelledError):
            await self._sender
        self._sender = None

    async def run(self) -> None:
        """Send Events in the order recorded until `close()` and the queue is empty. Cancelled, it stops
        at once: what is still queued is dropped, never sent by a controller that has stopped."""
        try:
            while not (self._closed and self._queue.empty()):
                pending = await self._queue.get()
                try:
                    if pending is not None:
                        await self._send(pending)
                except Exception as exc:  # an Event is best effort; the sync must never see this
                    log.warning(
                        "event not written", reason=pending.key.reason if pending else "", error=str(exc)
                    )
                finally:
                    self._queue.task_done()
        except asyncio.CancelledError:
            self._closed = True
            self._drop_queued()
            raise

    def _drop_queued(self) -> None:
        while not self._queue.empty():
            if self._queue.get_nowait() is not None:
                self.dropped += 1
            self._queue.task_done()

    async def _send(self, pending: _Pending) -> None:
        seen = self._seen.get(pending.key)
        if seen is not None:
            seen.count += 1
            patch = {"count": seen.count, "lastTimestamp": pending.timestamp}
            try:
                await self._writer.patch(EVENTS, seen.name, patch, seen.namespace)
                self._seen.move_to_end(pending.key)
                return
            except errors.NotFound:
                del self._seen[pending.key]
        self._sequence += 1
        unique = f"{int(self._utcnow().timestamp() * 1e9):x}{self._sequence:04x}"
        body = new_event(
            pending.involved,
            pending.key,
            timestamp=pending.timestamp,
            component=self._component,
            host=self._host,
            unique=unique,
        )
        namespace = body["metadata"]["namespace"]
        await self._writer.create(EVENTS, body, namespace)
        self._seen[pending.key] = _Seen(body["metadata"]["name"], namespace, 1)
        if len(self._seen) > _REMEMBERED_EVENTS:
            self._seen.popitem(last=False)
