"""One shared informer per (resource, namespace), started and stopped together."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from dataclasses import KW_ONLY, dataclass, field

from mpioperator.cache.informer import SharedInformer, Transform, strip_managed_fields
from mpioperator.cache.listwatch import ListerWatcher
from mpioperator.cache.reflector import DEFAULT_OPTIONS
from mpioperator.cache.store import IndexFunc
from mpioperator.clock import Clock
from mpioperator.kube.list_options import ListOptions
from mpioperator.kube.resources import Resource


@dataclass(slots=True)
class SharedInformerFactory:
    """Informers over `client`; `clock`, `transform` and `options` (what each informer's lists and watches
    select and how they read the answers) are what each informer it makes takes unless `informer()` is
    told otherwise."""

    client: ListerWatcher
    _: KW_ONLY
    clock: Clock | None = None
    transform: Transform | None = strip_managed_fields
    options: ListOptions = DEFAULT_OPTIONS
    _informers: dict[tuple[Resource, str | None], SharedInformer] = field(
        default_factory=dict, init=False, repr=False
    )

    def informer(
        self,
        res: Resource,
        namespace: str | None = None,
        *,
        indexers: Mapping[str, IndexFunc] | None = None,
        transform: Transform | None = None,
        options: ListOptions | None = None,
    ) -> SharedInformer:
        """The shared informer for `res` in `namespace` (None: all namespaces), made on first use.
        `indexers` not yet registered on it are added. `transform` and `options` replace the factory's own
        for this informer (`options.projection` limits the fields it parses, `options.page_bytes` pages
        every list by size: cache.reflector); these count only when it is made."""
        key = (res, namespace or None)
        informer = self._informers.get(key)
        if informer is None:
            informer = SharedInformer(
                self.client,
                res,
                namespace or None,
                indexers=indexers,
                transform=transform or self.transform,
                options=options or self.options,
                clock=self.clock,
            )
            self._informers[key] = informer
        elif indexers:
            missing = {name: f for name, f in indexers.items() if name not in informer.store.index_names()}
            if missing:
                informer.store.add_indexers(missing)
        return informer

    def informers(self) -> list[SharedInformer]:
        return list(self._informers.values())

    def start(self) -> None:
        """Start every informer not yet started (informers made after a start need another start)."""
        for informer in self._informers.values():
            informer.start()

    async def wait_for_cache_sync(self, timeout: float | None = None) -> bool:
        """Wait until every started informer has synced; False if `timeout` seconds pass first."""
        started = [i for i in self._informers.values() if i.started]
        try:
            async with asyncio.timeout(timeout):
                await asyncio.gather(*(i.wait_for_sync() for i in started))
        except TimeoutError:
            return False
        return True

    async def run_until_cancelled(self) -> None:
        """Start every informer (if not yet started) and keep them running until this is cancelled; they
        are all stopped, their watches and handler tasks ended, before it returns."""
        self.start()
        try:
            await asyncio.Event().wait()
        finally:
            await self.shutdown()

    async def shutdown(self) -> None:
        await asyncio.gather(*(i.stop() for i in self._informers.values()))
