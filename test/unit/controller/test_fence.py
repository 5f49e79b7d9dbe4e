"""A stopped controller's writer refuses every call, so nothing it forgot can write."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import pytest

from mpioperator.api.objects import Obj
from mpioperator.controller.errors import ControllerStopped
from mpioperator.controller.fence import FencedWriter
from mpioperator.kube.delete_options import BACKGROUND, DeleteOptions
from mpioperator.kube.resources import CONFIG_MAPS, Resource


class Recording:
    def __init__(self) -> None:
        self.calls: list[str] = []

    async def get(self, res: Resource, name: str, namespace: str | None = None) -> Obj:
        self.calls.append("get")
        return {}

    async def create(self, res: Resource, body: Obj, namespace: str | None = None) -> Obj:
        self.calls.append("create")
        return body

    async def update(self, res: Resource, body: Obj, namespace: str | None = None) -> Obj:
        self.calls.append("update")
        return body

    async def update_status(self, res: Resource, body: Obj, namespace: str | None = None) -> Obj:
        self.calls.append("update_status")
        return body

    async def patch(
        self, res: Resource, name: str, body: Obj | list[Any], namespace: str | None = None, **_: Any
    ) -> Obj:
        self.calls.append("patch")
        return {}

    async def delete(
        self, res: Resource, name: str, namespace: str | None = None, options: DeleteOptions = BACKGROUND
    ) -> Obj:
        self.calls.append("delete")
        return {}

    # KubeClient's calls outside the Writer protocol.
    async def list(self, res: Resource, namespace: str | None = None, **_: Any) -> Obj:
        self.calls.append("list")
        return {}

    async def pod_log(self, name: str, namespace: str, **_: Any) -> str:
        self.calls.append("pod_log")
        return ""


async def _every_verb(writer: FencedWriter) -> list[str]:
    body: Obj = {"metadata": {"name": "x"}}
    calls: list[Callable[[], Awaitable[Obj]]] = [
        lambda: writer.get(CONFIG_MAPS, "x", "ns"),
        lambda: writer.create(CONFIG_MAPS, body, "ns"),
        lambda: writer.update(CONFIG_MAPS, body, "ns"),
        lambda: writer.update_status(CONFIG_MAPS, body, "ns"),
        lambda: writer.patch(CONFIG_MAPS, "x", {}, "ns"),
        lambda: writer.delete(CONFIG_MAPS, "x", "ns"),
    ]
    outcomes = []
    for call in calls:
        try:
            await call()
            outcomes.append("passed")
        except ControllerStopped:
            outcomes.append("refused")
    return outcomes


async def test_an_open_writer_passes_every_call_through() -> None:
    inner = Recording()
    assert await _every_verb(FencedWriter(inner)) == ["passed"] * 6
    assert inner.calls == ["get", "create", "update", "update_status", "patch", "delete"]


async def test_a_closed_writer_refuses_every_call_without_reaching_the_api() -> None:
    inner = Recording()
    writer = FencedWriter(inner)
    writer.close()
    assert await _every_verb(writer) == ["refused"] * 6
    assert inner.calls == []


async def test_only_the_writer_protocols_calls_pass_the_fence() -> None:
    """The wrapped client's other calls and attributes are not reachable through an open fence: a call
    outside the protocol raises AttributeError and reaches nothing, while a protocol call on the same
    fence does reach the client."""
    recording = Recording()
    fence = FencedWriter(recording)
    outside: list[tuple[str, tuple[Any, ...]]] = [("list", (CONFIG_MAPS, "ns")), ("pod_log", ("x", "ns"))]
    for name, args in outside:
        with pytest.raises(AttributeError):
            await getattr(fence, name)(*args)
    with pytest.raises(AttributeError):
        _ = fence.calls  # the wrapped client's, not the protocol's
    assert recording.calls == [], "a call outside the protocol reached the wrapped client"
    await fence.get(CONFIG_MAPS, "x", "ns")
    assert recording.calls == ["get"]
