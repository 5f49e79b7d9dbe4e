"""The blocking MPIJob client: the asynchronous one driven by a private event loop, call by call.

For scripts, notebooks without a running loop, and the CLI. Code that already runs an event loop uses
`AsyncMPIJobClient` directly (a blocking call cannot run inside a loop).
"""

from __future__ import annotations

import asyncio
import builtins
import os
from collections.abc import AsyncGenerator, AsyncIterator, Callable, Iterator, Mapping
from typing import Any, Self, TypeVar

from mpioperator.client.aio import AsyncMPIJobClient

Obj = dict[str, Any]
T = TypeVar("T")


class MPIJobClient:
    """The same calls as AsyncMPIJobClient, blocking. Close it (or use `with`) to free its connections."""

    def __init__(
        self,
        kubeconfig: str | os.PathLike[str] | None = None,
        *,
        context: str | None = None,
        namespace: str | None = None,
    ) -> None:
        self._runner = asyncio.Runner()
        try:
            self._aio = AsyncMPIJobClient.from_kubeconfig(kubeconfig, context=context, namespace=namespace)
        except BaseException:
            self._runner.close()
            raise

    @property
    def namespace(self) -> str:
        return self._aio.namespace

    @property
    def aio(self) -> AsyncMPIJobClient:
        return self._aio

    def close(self) -> None:
        self._runner.run(self._aio.close())
        self._runner.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def create(self, job: Mapping[str, Any], namespace: str | None = None) -> Obj:
        return self._runner.run(self._aio.create(job, namespace))

    def get(self, name: str, namespace: str | None = None) -> Obj:
        return self._runner.run(self._aio.get(name, namespace))

    def list(
        self, namespace: str | None = None, *, all_namespaces: bool = False, label_selector: str | None = None
    ) -> builtins.list[Obj]:
        return self._runner.run(
            self._aio.list(namespace, all_namespaces=all_namespaces, label_selector=label_selector)
        )

    def pods(self, name: str, namespace: str | None = None) -> builtins.list[Obj]:
        return self._runner.run(self._aio.pods(name, namespace))

    def events(self, name: str, namespace: str | None = None) -> builtins.list[Obj]:
        return self._runner.run(self._aio.events(name, namespace))

    def watch(
        self, name: str | None = None, namespace: str | None = None, *, all_namespaces: bool = False
    ) -> Iterator[tuple[str, Obj]]:
        return self._iterate(self._aio.watch(name, namespace, all_namespaces=all_namespaces))

    def wait(
        self,
        name: str,
        namespace: str | None = None,
        *,
        timeout: float | None = None,
        on_change: Callable[[Obj], None] | None = None,
        raise_on_failure: bool = False,
    ) -> Obj:
        return self._runner.run(
            self._aio.wait(
                name, namespace, timeout=timeout, on_change=on_change, raise_on_failure=raise_on_failure
            )
        )

    def launcher_pod(self, name: str, namespace: str | None = None) -> Obj:
        return self._runner.run(self._aio.launcher_pod(name, namespace))

    def logs(self, name: str, namespace: str | None = None, *, tail_lines: int | None = None) -> str:
        return self._runner.run(self._aio.logs(name, namespace, tail_lines=tail_lines))

    def follow_logs(
        self, name: str, namespace: str | None = None, *, start_timeout: float | None = None
    ) -> Iterator[str]:
        return self._iterate(self._aio.follow_logs(name, namespace, start_timeout=start_timeout))

    def suspend(self, name: str, namespace: str | None = None) -> Obj:
        return self._runner.run(self._aio.suspend(name, namespace))

    def resume(self, name: str, namespace: str | None = None) -> Obj:
        return self._runner.run(self._aio.resume(name, namespace))

    def delete(
        self, name: str, namespace: str | None = None, *, wait: bool = False, timeout: float | None = None
    ) -> None:
        self._runner.run(self._aio.delete(name, namespace, wait=wait, timeout=timeout))

    def _iterate(self, items: AsyncIterator[T]) -> Iterator[T]:
        """An async iterator stepped on this client's loop; closing the sync one closes it (its stream)."""
        try:
            while True:
                try:
                    yield self._runner.run(anext_of(items))
                except StopAsyncIteration:
                    return
        finally:
            if isinstance(items, AsyncGenerator):
                self._runner.run(items.aclose())


async def anext_of(items: AsyncIterator[T]) -> T:
    return await anext(items)
