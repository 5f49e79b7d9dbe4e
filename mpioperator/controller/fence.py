"""The controller's API writer, refused once the controller has stopped.

When the controller stops (it lost the Lease, or it is shutting down) every task it started has ended,
but a stray reference to its writer must still not be able to write for a leader that no longer is one.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any, cast

from mpioperator.controller.errors import ControllerStopped
from mpioperator.controller.ports import Writer

_WRITER_CALLS = frozenset(name for name in dir(Writer) if not name.startswith("_"))


class FencedWriter:
    """Passes every call of the `Writer` protocol to `writer` until `close()`; from then on each raises
    ControllerStopped. The calls are forwarded by name, so the protocol is stated once (ports.py)."""

    def __init__(self, writer: Writer) -> None:
        self._writer = writer
        self._closed = False

    @property
    def closed(self) -> bool:
        return self._closed

    def close(self) -> None:
        self._closed = True

    @property
    def writer(self) -> Writer:
        """This fence as the Writer it forwards."""
        return cast(Writer, self)

    def __getattr__(self, name: str) -> Callable[..., Awaitable[Any]]:
        if name not in _WRITER_CALLS:
            raise AttributeError(name)
        call: Callable[..., Awaitable[Any]] = getattr(self._writer, name)

        async def fenced(*args: Any, **kwargs: Any) -> Any:
            if self._closed:
                raise ControllerStopped("the controller has stopped; it sends nothing more to the API server")
            return await call(*args, **kwargs)

        return fenced
