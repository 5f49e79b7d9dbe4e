"""The seam the reflector lists and watches through (its clock is mpioperator.clock.Clock).

`mpioperator.kube.client.KubeClient` satisfies `ListerWatcher` structurally; unit tests pass fakes.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator
from typing import Any, Protocol

from mpioperator.kube.projection import Projection
from mpioperator.kube.resources import Resource


class ListerWatcher(Protocol):
    def list_pages(
        self,
        res: Resource,
        namespace: str | None = None,
        *,
        label_selector: str | None = None,
        field_selector: str | None = None,
        limit: int | None = None,
        resource_version: str | None = None,
        projection: Projection | None = None,
        page_bytes: int | None = None,
    ) -> AsyncGenerator[dict[str, Any], None]: ...

    def watch(
        self,
        res: Resource,
        namespace: str | None = None,
        *,
        resource_version: str,
        timeout_seconds: int,
        allow_bookmarks: bool = True,
        label_selector: str | None = None,
        field_selector: str | None = None,
        inactivity_timeout: float | None = None,
        projection: Projection | None = None,
    ) -> AsyncGenerator[dict[str, Any], None]: ...
