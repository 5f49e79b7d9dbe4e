"""SharedInformer: one reflector filling one indexed store, fanned out to any number of handlers.

Rules (client-go's, with RealFIFO's in-order delivery):
- The store is written first, then handlers are notified, so a handler always finds the object cached.
- Each handler has its own unbounded queue and task: delivery is in order per handler, and a slow
  handler never delays another (client-go's processorListener; a stalled handler grows its queue).
  Unbounded on purpose: the producer is the store update, which cannot wait for one handler without
  stalling the cache and every other handler. The watch below it is bounded (kube.watch), and the
  controller's handlers only compute a key and enqueue it, so a queue holds little more than the events
  of one turn of the loop.
- A relist notifies on_add for new objects, on_update(old, new) for every object that was already
  cached (including unchanged ones, whose old and new resourceVersion are equal: treat those as a
  resync), and on_delete(DeletedFinalStateUnknown) for cached objects the list no longer has.
- A handler added late first receives the current contents as adds.
- Handlers may be plain functions or coroutine functions; an exception is logged and delivery goes on.
- No periodic resync: level-triggered controllers here requeue on failure instead.
"""

from __future__ import annotations

import asyncio
import builtins
import inspect
from collections.abc import Callable, Mapping
from typing import Any

import structlog

from mpioperator.api.objects import Obj
from mpioperator.cache.keys import DeletedFinalStateUnknown, object_key
from mpioperator.cache.listwatch import ListerWatcher
from mpioperator.cache.reflector import DEFAULT_OPTIONS, MIN_WATCH_TIMEOUT, Reflector, cancel_and_wait
from mpioperator.cache.store import IndexFunc, Store
from mpioperator.clock import Clock
from mpioperator.kube.list_options import ListOptions
from mpioperator.kube.resources import Resource

__all__ = [
    "DeletedFinalStateUnknown",
    "HandlerRegistration",
    "SharedInformer",
    "Transform",
    "strip_managed_fields",
]

log = structlog.get_logger(__name__)

Transform = Callable[[Obj], Obj]
AddHandler = Callable[[Obj], Any]
UpdateHandler = Callable[[Obj, Obj], Any]
DeleteHandler = Callable[[Obj | DeletedFinalStateUnknown], Any]


def strip_managed_fields(obj: Obj) -> Obj:
    """Drop metadata.managedFields: often the bulk of an object, and never read by a controller."""
    meta = obj.get("metadata")
    if isinstance(meta, dict):
        meta.pop("managedFields", None)
    return obj


class HandlerRegistration:
    """One handler's ordered queue and delivery task."""

    def __init__(
        self,
        on_add: AddHandler | None,
        on_update: UpdateHandler | None,
        on_delete: DeleteHandler | None,
        name: str,
    ) -> None:
        self._on_add = on_add
        self._on_update = on_update
        self._on_delete = on_delete
        self._name = name
        self._queue: asyncio.Queue[tuple[Any, ...]] = asyncio.Queue()
        self._enqueued = 0
        self._delivered = 0
        self._sync_target: int | None = None
        self._task: asyncio.Task[None] | None = None

    def has_synced(self) -> bool:
        """True once this handler has been delivered everything up to the informer's initial sync."""
        return self._sync_target is not None and self._delivered >= self._sync_target

    def _mark_synced_here(self) -> None:
        self._sync_target = self._enqueued

    def _push(self, *notification: Any) -> None:
        self._enqueued += 1
        self._queue.put_nowait(notification)

    def _start(self) -> None:
        if self._task is None or self._task.done():
            self._task = asyncio.get_running_loop().create_task(self._run(), name=self._name)

    async def _stop(self) -> None:
        task, self._task = self._task, None
        await cancel_and_wait(task)

    async def _run(self) -> None:
        while True:
            kind, *args = await self._queue.get()
            handler: Callable[..., Any] | None = (
                self._on_add if kind == "add" else self._on_update if kind == "update" else self._on_delete
            )
            try:
                if handler is not None:
                    result = handler(*args)
                    if inspect.isawaitable(result):
                        await result
            except Exception:
                log.exception("event handler failed", handler=self._name, notification=kind)
            finally:
                self._delivered += 1


class SharedInformer:
    """Keeps `store` equal to the server's objects of one resource (in one namespace or all) and
    tells every registered handler about each change. Objects in `store` are read-only."""

    def __init__(
        self,
        lw: ListerWatcher,
        resource: Resource,
        namespace: str | None = None,
        *,
        indexers: Mapping[str, IndexFunc] | None = None,
        transform: Transform | None = None,
        options: ListOptions = DEFAULT_OPTIONS,
        clock: Clock | None = None,
        min_watch_timeout: int = MIN_WATCH_TIMEOUT,
    ) -> None:
        self.resource = resource
        self.namespace = namespace
        self.store = Store(indexers)
        self._handlers: builtins.list[HandlerRegistration] = []
        self._synced = False
        self._synced_event = asyncio.Event()
        self._started = False
        self.reflector = Reflector(
            lw,
            resource,
            _StoreThenNotify(self),
            namespace=namespace,
            options=options,
            clock=clock,
            min_watch_timeout=min_watch_timeout,
            transform=transform,
        )

    # Handlers.

    def add_event_handler(
        self,
        *,
        on_add: AddHandler | None = None,
        on_update: UpdateHandler | None = None,
        on_delete: DeleteHandler | None = None,
    ) -> HandlerRegistration:
        reg = HandlerRegistration(
            on_add, on_update, on_delete, name=f"handler {self.resource.plural} #{len(self._handlers)}"
        )
        for obj in self.store.list():
            reg._push("add", obj)
        if self._synced:
            reg._mark_synced_here()
        self._handlers.append(reg)
        if self._started:
            reg._start()
        return reg

    async def remove_event_handler(self, reg: HandlerRegistration) -> None:
        if reg in self._handlers:
            self._handlers.remove(reg)
            await reg._stop()

    # Lifecycle.

    def start(self) -> None:
        """Start listing and watching, and delivery to handlers. Needs a running event loop."""
        if self._started:
            return
        self._started = True
        for reg in self._handlers:
            reg._start()
        self.reflector.start()

    async def stop(self) -> None:
        self._started = False
        await self.reflector.stop()
        for reg in self._handlers:
            await reg._stop()

    @property
    def started(self) -> bool:
        return self._started

    def has_synced(self) -> bool:
        """True once the first list is in the store and its notifications are queued to every handler."""
        return self._synced

    async def wait_for_sync(self) -> None:
        await self._synced_event.wait()

    @property
    def last_sync_resource_version(self) -> str:
        return self.reflector.last_sync_resource_version

    # Reads (the store's, for convenience).

    def get(self, namespace: str | None, name: str) -> Obj | None:
        return self.store.get(namespace, name)

    def list(self) -> builtins.list[Obj]:
        return self.store.list()

    def by_index(self, index_name: str, value: str) -> builtins.list[Obj]:
        return self.store.by_index(index_name, value)

    # Called by the reflector, through _StoreThenNotify.

    def _apply(self, obj: Obj) -> None:
        old = self.store.update(obj)
        if old is None:
            self._notify("add", obj)
        else:
            self._notify("update", old, obj)

    def _apply_delete(self, obj: Obj) -> None:
        self.store.delete(obj)
        self._notify("delete", obj)

    def _apply_replace(self, items: builtins.list[Obj]) -> None:
        result = self.store.replace(items)
        for old, new in result.changed:
            if old is None:
                self._notify("add", new)
            else:
                self._notify("update", old, new)
        for key, last in result.deleted:
            self._notify("delete", DeletedFinalStateUnknown(key, last))
        if not self._synced:
            self._synced = True
            for reg in self._handlers:
                reg._mark_synced_here()
            self._synced_event.set()

    def _notify(self, kind: str, *args: Any) -> None:
        for reg in self._handlers:
            reg._push(kind, *args)

    def __repr__(self) -> str:
        where = self.namespace or "*"
        return f"SharedInformer({self.resource.plural} in {where}, {len(self.store)} objects)"


class _StoreThenNotify:
    """The informer seen as the reflector's store."""

    def __init__(self, informer: SharedInformer) -> None:
        self._informer = informer

    def add(self, obj: Obj) -> None:
        self._informer._apply(obj)

    def update(self, obj: Obj) -> None:
        self._informer._apply(obj)

    def delete(self, obj: Obj) -> None:
        self._informer._apply_delete(obj)

    def replace(self, items: list[Obj], resource_version: str) -> None:
        self._informer._apply_replace(items)


def key_of(obj: Obj | DeletedFinalStateUnknown) -> str:
    """The store key of a notification's object, tombstones included."""
    return obj.key if isinstance(obj, DeletedFinalStateUnknown) else object_key(obj)
