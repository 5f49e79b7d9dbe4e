"""The PriorityClasses random pod templates may name (test.fuzz.specs.PRIORITY_CLASSES), on a real cluster."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

from mpioperator.testing.cluster import LocalCluster
from mpioperator.testing.rest import RestError
from test.fuzz.specs import PRIORITY_CLASSES

PATH = "/apis/scheduling.k8s.io/v1/priorityclasses"


@contextlib.contextmanager
def priority_classes(cluster: LocalCluster) -> Iterator[None]:
    """Create the classes that do not exist yet; delete those it created afterwards."""
    made = []
    for name, value in PRIORITY_CLASSES.items():
        body = {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": name}}
        try:
            cluster.rest.create(PATH, {**body, "value": value})
            made.append(name)
        except RestError as err:
            if err.status != 409:
                raise
    try:
        yield
    finally:
        for name in made:
            with contextlib.suppress(RestError):
                cluster.rest.delete(f"{PATH}/{name}")
