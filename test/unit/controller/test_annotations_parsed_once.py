"""One sync reads a job's `mpioperator.io/` annotations once (api/extensions/parsed.py): the value parsed at
the start of the sync is what every feature, decorator and status step reads, so nothing re-reads or
re-validates them later. Counted, not timed, for a job with every extension on."""

from __future__ import annotations

import sys
from collections import Counter
from collections.abc import Callable
from typing import Any

import pytest

from mpioperator.api import annotation_keys as keys
from mpioperator.api.objects import Obj
from mpioperator.controller.sync import SyncSettings
from test.unit.controller import sync_fixtures as fx

IMAGE = "registry.example/kubectl-delivery:v1"

# Every extension asked for at once (exec and the IP hostfile exclude each other: this job uses exec).
EVERY_EXTENSION = {
    keys.WORKER_STARTUP_DEADLINE: "600",
    keys.KEEP_FAILED_LAUNCHER: "true",
    keys.LAUNCH_AGENT: "exec",
    keys.WAIT_FOR_SSH_PORT: "22",
    keys.RESTART_POLICY: "OnFailure",
    keys.MAX_RESTARTS: "2",
    keys.RESTART_BACKOFF: "5",
    keys.DEBUG_MODE: "true",
    keys.DEBUG_COMMAND: "sleep 3600",
    keys.DEBUG_WORKER_COMMAND: "sleep 3600",
    keys.DEBUG_SKIP_INIT_CONTAINERS: "Worker",
    keys.RESUME_LAUNCHER_COMMAND: "/train --resume",
    keys.RESUME_WORKER_COMMAND: "/bin/sh -c 'exec sleep 1'",
    keys.RESUME_SKIP_INIT_CONTAINERS: "Launcher",
    keys.LAUNCHER_PROGRAM: "/train --epochs 3",
    keys.MPIRUN_EXTRA_ARGS: "--bind-to none",
    keys.MCA_PARAMS: "btl=self,tcp",
    keys.MPI_HOME: "/opt/openmpi",
    keys.ROLL_WORKERS: "true",
    keys.HOSTFILE_PATH: "/kubeflow/openmpi/assets/hostfile",
    keys.MIN_WORKERS: "1",
    keys.MAX_WORKERS: "4",
    keys.PROGRESS: "json",
    keys.STALL_TIMEOUT: "60",
    keys.STALL_ACTION: "fail",
    keys.HOSTFILE_ADDRESSES: "dns",
}


def _every_extension(job: Obj) -> Obj:
    job["metadata"]["annotations"] = dict(EVERY_EXTENSION)
    launcher = job["spec"]["mpiReplicaSpecs"]["Launcher"]["template"]["spec"]["containers"][0]
    del launcher["command"], launcher["args"]  # the generated mpirun line is asked for instead
    return job


@pytest.fixture
def reads(monkeypatch: pytest.MonkeyPatch) -> Counter[str]:
    """How often the annotations are read (`annotation_keys.of`, under any name a module gave it)."""
    counted: Counter[str] = Counter()
    original: Callable[[Obj], dict[str, str]] = keys.of

    def of(job: Obj) -> dict[str, str]:
        counted["of"] += 1
        return original(job)

    for module in list(sys.modules.values()):
        if not (getattr(module, "__name__", "") or "").startswith("mpioperator"):
            continue
        for name, value in list(vars(module).items()):
            if value is original:
                monkeypatch.setattr(module, name, of)
    return counted


def _no_invalid(scene: fx.Scene) -> None:
    written = [c.body for c in scene.writer.log if c.verb == "update_status" and c.body is not None]
    found: Any = [c["type"] for c in written[-1]["status"].get("conditions") or ()] if written else []
    assert "Invalid" not in found, scene.recorder.events


async def test_a_new_jobs_first_sync_reads_its_annotations_once_with_every_extension_on(
    reads: Counter[str],
) -> None:
    scene = fx.Scene(_every_extension(fx.job(2)), settings=SyncSettings(exec_agent_image=IMAGE))
    reads.clear()  # only the sync's reads count, not the fixture's
    await scene.sync()
    assert ("create", "pods", "pi-worker-0") in scene.writer.calls, scene.writer.calls
    _no_invalid(scene)
    assert reads == {"of": 1}


async def test_a_running_jobs_sync_reads_its_annotations_once_with_every_extension_on(
    reads: Counter[str],
) -> None:
    pi = _every_extension(fx.running_job(2))
    pods = [fx.worker(pi, i) for i in range(2)]
    scene = fx.running_scene(pi, *pods, settings=SyncSettings(exec_agent_image=IMAGE))
    reads.clear()  # only the sync's reads count, not the fixture's (the pods it made)
    await scene.sync()
    _no_invalid(scene)
    assert reads == {"of": 1}
