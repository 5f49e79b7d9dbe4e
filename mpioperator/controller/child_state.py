"""What the sync reads off its children's status: a finished launcher, a Ready or Running pod, and
whether the launcher may be made yet."""

from __future__ import annotations

from mpioperator.api import accessors
from mpioperator.api import constants as api
from mpioperator.api.extensions.parsed import Extensions
from mpioperator.api.objects import Obj
from mpioperator.controller.pod_state import PodStates, describe


def launcher_done(launcher: Obj) -> bool:
    for cond in launcher.get("status", {}).get("conditions") or ():
        if cond.get("type") in ("Complete", "Failed") and cond.get("status") == "True":
            return True
    return False


def pod_ready(pod: Obj) -> bool:
    return describe(pod).ready


def may_create_launcher(
    job: Obj, ext: Extensions, workers: list[Obj], states: PodStates | None = None
) -> bool:
    """Whether the launcher may run now: always under AtStartup; under WaitForWorkersReady once every
    worker is Ready, and never while the job is suspended (as upstream's own fix: with no workers, 0 == 0).
    Ours: an exec-agent job that asks to wait for its hosts also waits until every worker is Running,
    the one state in which the API server's exec reaches a pod."""
    waits_ready = accessors.launcher_creation_policy(job) != api.AT_STARTUP
    waits_running = ext.launch.waits_for_running_workers
    if not waits_ready and not waits_running:
        return True
    if accessors.suspended(job):
        return False
    states = states or PodStates()
    if waits_ready and not all(states.of(w).ready for w in workers):
        return False
    return not waits_running or all(states.of(w).running for w in workers)
