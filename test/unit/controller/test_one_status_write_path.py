"""Every MPIJob status write of the controller goes through status_writer.write_if_changed, a whole-job
restart's count too: a Conflict then reads the newer job and ends the sync (decisions-local L42, L43)."""

from __future__ import annotations

import copy
import re
from pathlib import Path

import pytest

from mpioperator.api.extensions import restarts
from mpioperator.controller.errors import StatusConflict
from test.unit.controller.sync_fixtures import (
    failed_worker,
    running_job,
    running_scene,
    worker,
)
from test.unit.controller.test_status_conflicts_in_memory import NewerOnTheServer

CONTROLLER = Path(__file__).resolve().parents[3] / "mpioperator" / "controller"


def test_only_the_status_writer_writes_an_mpijobs_status() -> None:
    writers = sorted(
        path.name
        for path in CONTROLLER.rglob("*.py")
        if re.search(r"update_status\(\s*MPIJOBS", path.read_text())
    )
    assert writers == ["status_writer.py"]


async def test_a_restart_whose_count_meets_a_newer_job_reads_it_and_deletes_nothing() -> None:
    pi = running_job()
    pi["metadata"]["annotations"] = {restarts.RESTART_POLICY: "OnWorkerFailure"}
    pi["metadata"]["resourceVersion"] = "10"
    newer = copy.deepcopy(pi)
    newer["metadata"]["resourceVersion"] = "11"
    failed = failed_worker(pi, 1)
    scene = running_scene(pi, worker(pi, 0), failed, writer=NewerOnTheServer(newer))

    with pytest.raises(StatusConflict):
        await scene.sync()

    assert scene.writer.calls == [("update_status", "mpijobs", "pi"), ("get", "mpijobs", "pi")]
    assert scene.recorder.events == []
