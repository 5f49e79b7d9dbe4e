"""How much of the project one sync walks through: one in-memory reconcile of a job with every extension on.

Run from the repository's root: `.venv/bin/python hack/sync_footprint.py`. The job asks for the exec
launch agent, a wait for its hosts, whole-job restarts, the generated mpirun line, a second hostfile path,
rolled workers, a kept failed launcher and its own start-up deadline, under gang scheduling; its workers
are Running, so the sync goes as far as making the launcher. The count is taken with `sys.setprofile`
over the sync alone (the fixtures are built before it starts).

Printed: the project's modules (files) the sync entered, the calls into project code, the stops (calls
from one project file into another) and, of those, the returns to a file the sync had already left.
"""

from __future__ import annotations

import asyncio
import sys
import types
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from mpioperator.controller.features import default_features  # noqa: E402
from mpioperator.controller.sync import SyncSettings  # noqa: E402
from mpioperator.podgroup.scheduler_plugins import SchedulerPluginsBackend  # noqa: E402
from test.unit.controller import sync_fixtures as fx  # noqa: E402
from test.unit.controller.jobs import reference_job  # noqa: E402

PACKAGE = str(ROOT / "mpioperator")

ANNOTATIONS = {
    "mpioperator.io/launch-agent": "exec",
    "mpioperator.io/wait-for-ssh-port": "22",
    "mpioperator.io/restart-policy": "OnFailure",
    "mpioperator.io/max-restarts": "2",
    "mpioperator.io/restart-backoff-seconds": "5",
    "mpioperator.io/launcher-program": "/opt/train --epochs 3",
    "mpioperator.io/mpirun-extra-args": "--bind-to none",
    "mpioperator.io/mca-params": "btl=tcp,self",
    "mpioperator.io/mpi-home": "/usr/local",
    "mpioperator.io/hostfile-path": "/kubeflow/openmpi/assets/hostfile",
    "mpioperator.io/roll-workers-on-template-change": "true",
    "mpioperator.io/keep-failed-launcher": "true",
    "mpioperator.io/worker-startup-deadline-seconds": "600",
}


def _job() -> dict[str, Any]:
    job = reference_job(workers=2)
    job["metadata"]["annotations"] = dict(ANNOTATIONS)
    launcher = job["spec"]["mpiReplicaSpecs"]["Launcher"]["template"]["spec"]["containers"][0]
    del launcher["command"], launcher["args"]  # the generated mpirun line replaces them
    job["metadata"]["generation"] = 1
    return job


class Footprint:
    def __init__(self) -> None:
        self.files: set[str] = set()
        self.calls = 0
        self.stops = 0
        self.returns = 0
        self._left: set[str] = set()

    def __call__(self, frame: types.FrameType, event: str, arg: object) -> None:
        if event != "call":
            return
        here = frame.f_code.co_filename
        if not here.startswith(PACKAGE):
            return
        self.calls += 1
        self.files.add(here)
        caller = frame.f_back
        while caller is not None and not caller.f_code.co_filename.startswith(PACKAGE):
            caller = caller.f_back
        there = caller.f_code.co_filename if caller is not None else None
        if there is not None and there != here:
            self.stops += 1
            if here in self._left:
                self.returns += 1
            self._left.add(there)


async def _sync(footprint: Footprint) -> None:
    job = _job()
    workers = [fx.worker(job, i) for i in range(2)]
    scene = fx.Scene(job, *workers)
    syncer = scene.syncer_with(
        settings=SyncSettings(exec_agent_image="kubectl:1"),
        backend=SchedulerPluginsBackend("scheduler-plugins-scheduler"),
        features=default_features,
    )
    sys.setprofile(footprint)
    try:
        await syncer.sync("default/pi")
    finally:
        sys.setprofile(None)
    made = [c for c in scene.writer.calls if c[0] == "create"]
    print("writes:", ", ".join(f"{verb} {resource}" for verb, resource, _ in made))


def main() -> None:
    footprint = Footprint()
    asyncio.run(_sync(footprint))
    modules = sorted(str(Path(f).relative_to(ROOT)) for f in footprint.files)
    print(f"modules: {len(modules)}")
    print(f"calls: {footprint.calls}")
    print(f"stops: {footprint.stops} (returns to a file already left: {footprint.returns})")
    for module in modules:
        print(f"  {module}")


if __name__ == "__main__":
    main()
