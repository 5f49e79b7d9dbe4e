"""A job with more workers than --max-worker-replicas allows is Invalid and makes nothing, and a big job
that is suspended, held or unchanged costs its syncs no hostfile (docs/extensions.md)."""

from __future__ import annotations

from typing import Any

import pytest

from mpioperator.api.objects import Obj
from mpioperator.controller.builders import configmap
from mpioperator.controller.sync import SyncSettings
from test.unit.controller.sync_fixtures import (
    NOW,
    Scene,
    job,
    launcher,
    running_scene,
    shared_children,
    true_condition,
    worker,
)


def invalid_conditions(scene: Scene) -> list[tuple[str, str, str]]:
    return [
        (c["type"], c["status"], c["reason"])
        for c in scene.written_status()["conditions"]
        if c["type"] == "Invalid"
    ]


async def test_job_with_more_workers_than_the_flag_allows_is_invalid_with_one_event_and_no_children() -> None:
    scene = Scene(job(workers=5), settings=SyncSettings(max_worker_replicas=4))

    await scene.sync()
    scene.job["status"] = scene.written_status()
    await scene.sync()

    assert [verb for verb, _, _ in scene.writer.calls] == ["update_status"]
    assert invalid_conditions(scene) == [("Invalid", "True", "ValidationError")]
    message = "spec.mpiReplicaSpecs[Worker].replicas: Invalid value: 5: must be less than or equal to 4"
    assert scene.recorder.events == [("Warning", "ValidationError", f"Found validation errors: {message}")]


async def test_job_at_the_flag_bound_is_valid() -> None:
    scene = Scene(job(workers=4), settings=SyncSettings(max_worker_replicas=4))

    await scene.sync()

    assert ("create", "pods", "pi-worker-3") in scene.writer.calls
    assert invalid_conditions(scene) == []


async def test_default_bound_refuses_a_hundred_thousand_workers_before_any_child() -> None:
    # Suspended, as Kueue would hold it: no worker pod would be made either way, only the hostfile.
    scene = Scene(job(workers=100_000, suspend=True))

    await scene.sync()

    assert [verb for verb, _, _ in scene.writer.calls] == ["update_status"]
    assert invalid_conditions(scene) == [("Invalid", "True", "ValidationError")]
    assert [reason for _, reason, _ in scene.recorder.events] == ["ValidationError"]


async def test_lowering_the_flag_below_a_job_makes_it_invalid_and_raising_it_back_clears_that() -> None:
    big = job(workers=3)
    scene = Scene(big, settings=SyncSettings(max_worker_replicas=2))
    await scene.sync()
    big["status"] = scene.written_status()

    fixed = Scene(big, settings=SyncSettings(max_worker_replicas=3))
    await fixed.sync()

    assert ("create", "pods", "pi-worker-2") in fixed.writer.calls
    assert invalid_conditions(fixed) == []


class CountedBuilds:
    """Counts the hostfile ConfigMaps built from now on (the builder's module attribute, which children.py
    calls, wrapped)."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.count = 0
        real = configmap.new_config_map

        def counted(*args: Any, **kwargs: Any) -> Obj:
            self.count += 1
            return real(*args, **kwargs)

        monkeypatch.setattr(configmap, "new_config_map", counted)


async def test_unchanged_suspended_job_builds_its_hostfile_once_and_a_change_builds_it_again(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    pi = job(workers=3, suspend=True)
    status = {
        "conditions": [true_condition("Created", "MPIJobCreated", "MPIJob default/pi is created.", NOW)]
    }
    pi["status"] = status
    scene = Scene(pi, *shared_children(pi), launcher(pi, suspended=True))
    builds = CountedBuilds(monkeypatch)

    for _ in range(3):
        await scene.sync()

    assert builds.count == 1  # the first sync compares the cached ConfigMap once; the others trust it
    assert [c for c in scene.writer.calls if c[1] == "configmaps"] == []

    # The replicas changed while suspended (Kueue's partial admission does so): compared and rewritten.
    pi["spec"]["mpiReplicaSpecs"]["Worker"]["replicas"] = 2
    await scene.sync()

    assert builds.count == 2
    hostfile = scene.writer.body("update", "configmaps", "pi-config")["data"][configmap.HOSTFILE]
    assert hostfile == configmap.hostfile(pi)
    assert hostfile.count("\n") == 2


async def test_unchanged_running_job_builds_its_hostfile_once(monkeypatch: pytest.MonkeyPatch) -> None:
    pi = job(workers=3)
    scene = running_scene(pi, *(worker(pi, i) for i in range(3)))
    builds = CountedBuilds(monkeypatch)

    for _ in range(3):
        await scene.sync()

    assert builds.count == 1


async def test_running_job_whose_config_map_is_right_is_not_rewritten_and_an_edit_is_repaired() -> None:
    pi = job(workers=3)
    pods = [worker(pi, i) for i in range(3)]
    scene = running_scene(pi, *pods)
    await scene.sync()
    await scene.sync()
    assert [c for c in scene.writer.calls if c[1] == "configmaps"] == []

    # Someone edits the ConfigMap: a new version in the cache is compared again and repaired.
    edited = scene.listers.config_maps.get("default", "pi-config")
    assert edited is not None
    edited["data"] = {configmap.HOSTFILE: "evil\n", configmap.DISCOVER_HOSTS: "#!/bin/sh\n"}
    edited["metadata"]["resourceVersion"] = "6"
    await scene.sync()

    repaired = scene.writer.body("update", "configmaps", "pi-config")["data"]
    assert repaired[configmap.HOSTFILE] == configmap.hostfile(pi)


async def test_worker_pods_are_found_by_their_labels_whatever_order_the_cache_holds_them_in() -> None:
    pi = job(workers=3)
    pods = [worker(pi, i) for i in (2, 0, 1)]
    scene = running_scene(pi, *pods)

    await scene.sync()

    assert [c for c in scene.writer.calls if c[0] == "create"] == []
    assert scene.written_status()["replicaStatuses"]["Worker"] == {"active": 3}
