"""The seam the reflector lists and watches through (its clock is mpioperator.clock.Clock).

`mpioperator.kube.client.KubeClient` satisfies `ListerWatcher`; unit tests pass fakes.
"""

from __future__ import annotations

from typing import Protocol

from mpioperator.kube.calls import ListsAndWatches


class ListerWatcher(ListsAndWatches, Protocol):
    """What the reflector calls: KubeClient's `list_pages` and `watch`."""
