"""A child someone else changed is put back, on a real API server: what the sync sends must be what the
server stores (the Service's `publishNotReadyAddresses: false` goes as null, which it stores as unset)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest
import pytest_asyncio

from mpioperator.testing.cluster import LocalCluster
from mpioperator.testing.mpijobs import mpijob
from test.integration.controller.actors import job_selector
from test.integration.controller.test_upstream_sync_scenarios import Scene, informers_only

UPSTREAM_SELECTOR = job_selector("x")


@pytest_asyncio.fixture
async def scene(mpijob_crd: LocalCluster, make_namespace: Any) -> AsyncIterator[Scene]:
    async with informers_only(mpijob_crd, make_namespace(mpijob_crd)) as h:
        yield Scene(h)


@pytest.mark.parametrize("launcher_as_worker", [False, True])
async def test_service_whose_selector_and_publish_not_ready_addresses_were_changed_is_put_back(
    scene: Scene, launcher_as_worker: bool
) -> None:
    scene.submit(mpijob("x", workers=1, spec={"runLauncherAsWorker": launcher_as_worker}))
    await scene.sync("x")
    changed = {"selector": {"app": "someone-else"}, "publishNotReadyAddresses": not launcher_as_worker}
    scene.rest.merge_patch(scene.path("services", "x"), {"spec": changed})

    assert await scene.sync("x") == [("update", "services", "x")]

    spec = (scene.get("services", "x") or {})["spec"]
    assert spec["selector"] == UPSTREAM_SELECTOR
    assert spec.get("publishNotReadyAddresses", False) is launcher_as_worker
    await scene.assert_converged("x")
