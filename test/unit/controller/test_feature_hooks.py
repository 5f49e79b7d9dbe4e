"""The sync asks an ordered set of features at fixed hooks (controller/feature.py): a feature sees the
job at each hook in the sync's order, can stop the sync before its children, keep its pods from being
made or make the launcher wait; and sync.py itself knows no feature."""

from __future__ import annotations

import ast
import datetime as dt
from pathlib import Path

import pytest

from mpioperator.api.extensions.parsed import Extensions
from mpioperator.api.objects import Obj
from mpioperator.controller.builders.podspec import Decorator
from mpioperator.controller.feature import Feature, FeaturePorts, Seen, Stop
from mpioperator.controller.sync import JobSyncer
from test.unit.controller import sync_fixtures as fx

SYNC = Path(__file__).resolve().parents[3] / "mpioperator" / "controller" / "sync.py"


class Recording(Feature):
    """Says which hook it was asked at; `stop`, `refuse` and `wait` change the sync's course."""

    def __init__(self, ports: FeaturePorts, *, stop: Stop | None = None, refuse: bool = False) -> None:
        self.ports = ports
        self.asked: list[str] = []
        self._stop = stop
        self._refuse = refuse

    async def guard(self, cached: Obj, job: Obj, ext: Extensions) -> Obj:
        self.asked.append("guard")
        return cached

    async def before_children(
        self, cached: Obj, job: Obj, ext: Extensions, now: dt.datetime, suspended: bool
    ) -> Stop | None:
        self.asked.append("before_children")
        return self._stop

    async def with_launcher(self, job: Obj, ext: Extensions, launcher: Obj | None) -> bool:
        self.asked.append("with_launcher")
        return False

    async def with_shared_children(self, job: Obj, ext: Extensions, now: dt.datetime) -> float | None:
        self.asked.append("with_shared_children")
        return None

    async def before_pods(self, job: Obj, ext: Extensions, now: dt.datetime) -> bool:
        self.asked.append("before_pods")
        return not self._refuse

    async def before_workers(self, job: Obj, ext: Extensions, launcher: Obj | None) -> None:
        self.asked.append("before_workers")

    async def after_workers(
        self, job: Obj, ext: Extensions, launcher: Obj | None, workers: list[Obj]
    ) -> tuple[bool, Obj | None]:
        self.asked.append("after_workers")
        return False, launcher

    def decorate_launcher(self, job: Obj, ext: Extensions, decorate: Decorator | None) -> Decorator | None:
        self.asked.append("decorate_launcher")
        return decorate

    def launcher_created(self, job: Obj, ext: Extensions, launcher: Obj) -> None:
        self.asked.append("launcher_created")

    async def follow(self, job: Obj, ext: Extensions, workers: list[Obj]) -> None:
        self.asked.append("follow")

    def failure_detail(self, job: Obj, ext: Extensions, detail: str) -> str:
        self.asked.append("failure_detail")
        return detail

    def amend_status(self, status: Obj, now: dt.datetime) -> None:
        self.asked.append("amend_status")

    def describe(self, job: Obj, ext: Extensions, status: Obj, seen: Seen) -> None:
        self.asked.append("describe")
        status["described"] = [p["metadata"]["name"] for p in seen.workers]

    def forget(self, uid: str) -> None:
        self.asked.append(f"forget {uid}")


def _syncer(scene: fx.Scene, **recording: object) -> tuple[JobSyncer, list[Recording]]:
    made: list[Recording] = []

    def features(ports: FeaturePorts) -> list[Feature]:
        made.append(Recording(ports, **recording))  # type: ignore[arg-type]
        return list(made)

    return scene.syncer_with(features=features), made


@pytest.mark.asyncio
async def test_a_feature_is_asked_at_each_hook_in_the_syncs_order() -> None:
    pi = fx.job(2)
    workers = [fx.worker(pi, i) for i in range(2)]
    scene = fx.Scene(pi, *fx.shared_children(pi, workers), *workers)
    syncer, (feature,) = _syncer(scene)

    await syncer.sync("default/pi")

    assert feature.asked == [
        "guard",
        "before_children",
        "with_launcher",
        "with_shared_children",
        "before_pods",
        "before_workers",
        "after_workers",
        "decorate_launcher",
        "launcher_created",
        "follow",
        "failure_detail",
        "amend_status",
        "describe",
    ]
    assert scene.writer.body("update_status", "mpijobs", "pi")["status"]["described"] == [
        "pi-worker-0",
        "pi-worker-1",
    ]


@pytest.mark.asyncio
async def test_a_features_stop_before_the_children_ends_the_sync_with_its_recheck() -> None:
    scene = fx.Scene(fx.job(2))
    syncer, (feature,) = _syncer(scene, stop=Stop(7.0))

    result = await syncer.sync("default/pi")

    assert result.requeue_after == 7.0
    assert scene.writer.calls == []
    assert feature.asked == ["guard", "before_children"]


@pytest.mark.asyncio
async def test_a_feature_that_refuses_pods_leaves_the_job_without_workers_or_launcher() -> None:
    scene = fx.Scene(fx.job(2))
    syncer, _ = _syncer(scene, refuse=True)

    await syncer.sync("default/pi")

    made = [(verb, res) for verb, res, _ in scene.writer.calls if verb == "create"]
    assert ("create", "pods") not in made
    assert ("create", "jobs") not in made
    assert ("create", "services") in made


@pytest.mark.asyncio
async def test_a_finished_job_is_forgotten_by_every_feature() -> None:
    pi = fx.job(2, status=fx.finished_status("Succeeded", "MPIJobSucceeded"))
    scene = fx.Scene(pi, *fx.shared_children(pi), fx.launcher(pi, "Complete"))
    syncer, (feature,) = _syncer(scene)

    await syncer.sync("default/pi")

    assert f"forget {pi['metadata']['uid']}" in feature.asked


def test_the_sync_module_names_no_feature_and_stays_under_320_lines() -> None:
    source = SYNC.read_text()
    imported = {node.module or "" for node in ast.walk(ast.parse(source)) if isinstance(node, ast.ImportFrom)}
    # The extensions' controller side: the features package, and the worker roll's shared checks.
    features = ("mpioperator.controller.features", "mpioperator.controller.template_edits")
    assert sorted(m for m in imported if m.startswith(features)) == []
    assert len(source.splitlines()) < 320
