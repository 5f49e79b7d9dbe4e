"""Progress and stalled jobs (docs/extensions.md, decisions-local L49), from the running launcher's log.

`follow` reads the launcher pod's new output through the one `LogFollower` (its turn and the overall
budget permitting); `describe` puts what was read into the status: `status.progress`, and the `Stalled`
condition once the job has shown no new output (no new progress, when it reports progress) for its
`mpioperator.io/stall-timeout-seconds`, with one Warning event. A stalled job with a restart policy is
restarted as a whole by the restarts feature (it reads the condition); without one,
`mpioperator.io/stall-action: fail` fails it, and its launcher is stopped as cleanPodPolicy All stops one.
`recheck_after` brings a followed job back for its next read, as nothing else changes while it runs.
"""

from __future__ import annotations

import datetime as dt

from mpioperator.api import names
from mpioperator.api.extensions import launcher_log as wanted
from mpioperator.api.extensions import restarts as restart_policy
from mpioperator.api.extensions.parsed import Extensions
from mpioperator.api.objects import Obj
from mpioperator.api.ownership import is_controlled_by
from mpioperator.controller import conditions
from mpioperator.controller.events import WARNING, truncate_message
from mpioperator.controller.feature import Feature, FeaturePorts, Seen
from mpioperator.controller.log_follower import LogFollower
from mpioperator.controller.phase import FAILED

REASON_STALLED = "MPIJobStalled"
REASON_OUTPUT_RESUMED = "MPIJobOutputResumed"


def _running(pods: list[Obj]) -> Obj | None:
    for pod in pods:
        if (pod.get("status") or {}).get("phase") == "Running" and not pod["metadata"].get(
            "deletionTimestamp"
        ):
            return pod
    return None


def _launcher_container(job: Obj) -> str | None:
    """The launcher template's first container: where mpirun runs (the pod cache keeps no pod spec)."""
    template = ((job.get("spec") or {}).get("mpiReplicaSpecs") or {}).get("Launcher") or {}
    containers = ((template.get("template") or {}).get("spec") or {}).get("containers") or ()
    return str(containers[0].get("name")) if containers and containers[0].get("name") else None


def stalled_by_us(status: Obj) -> bool:
    failed = conditions.find(status, "Failed")
    return failed is not None and failed.get("status") == "True" and failed.get("reason") == REASON_STALLED


class LauncherLogFeature(Feature):
    def __init__(self, ports: FeaturePorts) -> None:
        self._ports = ports
        self._follower = LogFollower(ports.logs, ports.clock, ports.follow) if ports.logs else None

    @property
    def follower(self) -> LogFollower | None:
        return self._follower

    def _launcher_pods(self, job: Obj) -> list[Obj]:
        launcher = self._ports.listers.jobs.get(
            job["metadata"].get("namespace", ""), names.launcher_name(job)
        )
        if launcher is None or not is_controlled_by(launcher, job):
            return []
        return self._ports.listers.pods.owned_by(launcher["metadata"].get("uid", ""))

    async def follow(self, job: Obj, ext: Extensions, workers: list[Obj]) -> None:
        if self._follower is None or not ext.log.follows_log:
            return
        uid = job["metadata"].get("uid", "")
        status = job.get("status") or {}
        if conditions.is_finished(status):
            self._follower.forget(uid)
            if stalled_by_us(status):
                await self._ports.children.stop_launcher(job)  # mpirun waits for ever in a stalled job
            return
        pod = _running(self._launcher_pods(job))
        if pod is None:
            return
        now = self._ports.clock.utcnow()
        await self._follower.read(uid, pod, _launcher_container(job), ext.log.progress_format, now)

    def describe(self, job: Obj, ext: Extensions, status: Obj, seen: Seen) -> None:
        if self._follower is None or not ext.log.follows_log or conditions.is_finished(status):
            return
        state = self._follower.known(job["metadata"].get("uid", ""))
        pod = _running(seen.launcher_pods)
        if state is None or pod is None or state.pod_uid != pod["metadata"].get("uid", ""):
            return
        with_progress = ext.log.progress_format is not None
        if with_progress and state.progress is not None and state.progress_at is not None:
            status["progress"] = state.progress.status(state.progress_at)
        timeout = ext.log.stall_timeout
        if timeout is None or state.last_read is None:
            return
        silent = (state.last_read - state.active_since(with_progress)).total_seconds()
        if silent >= timeout:
            self._stalled(job, ext, status, timeout, with_progress, seen.now)
        elif conditions.is_true(status, wanted.COND_STALLED):
            what = "progress" if with_progress else "launcher output"
            conditions.put(
                status, wanted.COND_STALLED, "False", REASON_OUTPUT_RESUMED, f"New {what} appeared.", seen.now
            )

    def _stalled(
        self, job: Obj, ext: Extensions, status: Obj, timeout: int, with_progress: bool, now: dt.datetime
    ) -> None:
        meta = job["metadata"]
        what = "progress" if with_progress else "launcher output"
        message = f"MPIJob {meta.get('namespace', '')}/{meta['name']} shows no new {what} for {timeout}s"
        restarts = ext.restarts.enabled and restart_policy.restarts(status) < ext.restarts.max_restarts
        fails = not restarts and ext.log.fails_when_stalled
        if restarts:
            message += "; it restarts as a whole (mpioperator.io/restart-policy)"
        elif fails:
            message += f"; it is failed ({wanted.STALL_ACTION}: {wanted.STALL_FAIL})"
        message = truncate_message(message)
        if conditions.is_true(status, wanted.COND_STALLED):
            return
        conditions.put(status, wanted.COND_STALLED, "True", REASON_STALLED, message, now)
        self._ports.recorder.record(job, WARNING, REASON_STALLED, message)
        if fails:
            conditions.set_condition(
                status, conditions.new_condition("Failed", "True", REASON_STALLED, message, now)
            )
            status.setdefault("completionTime", conditions.format_time(now))
            status["phase"] = FAILED

    def recheck_after(self, job: Obj, ext: Extensions, now: dt.datetime) -> float | None:
        if self._follower is None or not ext.log.follows_log:
            return None
        uid = job["metadata"].get("uid", "")
        if self._follower.known(uid) is None or _running(self._launcher_pods(job)) is None:
            return None
        return self._follower.due_in(uid, now)
