"""The sync handler's hooks for the annotations of docs/extensions.md: the user's SSH Secret, debug mode and
the generated launcher command (the roll on a template change is worker_roll.py's). Each does nothing for a
job without its annotation, so such a job is synced exactly as before.
"""

from __future__ import annotations

import datetime as dt

import structlog

from mpioperator.api import names
from mpioperator.api.extensions.parsed import Extensions
from mpioperator.api.objects import Obj
from mpioperator.controller import conditions
from mpioperator.controller.bounded import BoundedSet
from mpioperator.controller.builders.launcher_job import HOSTFILE_PATH
from mpioperator.controller.child_state import launcher_done
from mpioperator.controller.decorators.launcher_command import (
    command_line,
    generated_command,
    made_after_resume,
    made_for_debug,
)
from mpioperator.controller.errors import SyncError
from mpioperator.controller.events import NORMAL, WARNING
from mpioperator.controller.feature import ChildOperations, Feature, FeaturePorts, Seen
from mpioperator.controller.ports import Listers, Recorder, Writer
from mpioperator.controller.user_ssh_secret import UserSecretChecks
from mpioperator.kube import errors
from mpioperator.kube.delete_options import DeleteOptions
from mpioperator.kube.resources import JOBS, Resource

log = structlog.get_logger(__name__)

COND_SSH_SECRET = "SSHSecretInvalid"
COND_DEBUG_MODE = "DebugMode"
REASON_DEBUG_MODE = "DebugMode"
REASON_DEBUG_TOO_LATE = "LauncherAlreadyStarted"
REASON_DEBUG_ENDED = "DebugModeEnded"
REASON_COMMAND_GENERATED = "LauncherCommandGenerated"
REASON_LAUNCHER_RENEWED = "LauncherRenewedForResume"
# A job held for its SSH Secret is looked at again this often: the Secret is not its child, so its
# arrival or fix enqueues nothing by itself.
SECRET_RECHECK_SECONDS = 5.0


# The UIDs acted on, so a lagging cache does not make us act twice.
_Seen = BoundedSet[str]


def exec_line(job: Obj) -> str:
    ns = job["metadata"].get("namespace", "")
    container = job["spec"]["mpiReplicaSpecs"]["Launcher"]["template"]["spec"]["containers"][0]
    return f"kubectl exec -it -n {ns} job/{names.launcher_name(job)} -c {container.get('name', '')} -- sh"


# One rule for our own conditions, kept with upstream's in conditions.py.
_drop = conditions.drop
_put = conditions.put


class Conveniences:
    def __init__(self, listers: Listers, writer: Writer, recorder: Recorder) -> None:
        self._l = listers
        self._w = writer
        self._rec = recorder
        self._announced = _Seen()
        self._deleted = _Seen()
        self._user_secrets = UserSecretChecks(writer)

    # --- the user's own SSH Secret ------------------------------------------------------------------
    async def ssh_secret(
        self, job: Obj, ext: Extensions, status: Obj, now: dt.datetime, children: ChildOperations
    ) -> bool:
        """Our generated Secret, or a check of the user's; True when the job must wait for the user's."""
        name = ext.conveniences.ssh_secret
        if name is None:
            _drop(status, COND_SSH_SECRET)
            await children.ssh_secret(job)
            return False
        ns = job["metadata"].get("namespace", "")
        found = await self._user_secrets.problem(name, ns, self._l.secrets.get(ns, name))
        if found is None:
            _drop(status, COND_SSH_SECRET)
            return False
        if _put(status, COND_SSH_SECRET, conditions.TRUE, found.reason, found.message, now):
            self._rec.record(job, WARNING, found.reason, found.message)
        return True

    # --- debug mode ---------------------------------------------------------------------------------
    async def end_debug_mode(self, job: Obj, ext: Extensions, launcher: Obj | None) -> None:
        """The annotation went while a launcher made for debug mode still runs: that launcher Job goes,
        and the next sync makes one that runs the job's own command. Workers stay as they are."""
        if launcher is None or ext.conveniences.debug_mode or not made_for_debug(launcher):
            return
        meta = launcher["metadata"]
        if launcher_done(launcher) or self._deleted.seen(meta.get("uid", "")):
            return
        await self._delete(JOBS, meta)
        message = (
            f"Debug mode ended: launcher Job {meta['name']} deleted, "
            "to be made again with the job's own command"
        )
        self._rec.record(job, NORMAL, REASON_DEBUG_ENDED, message)

    # --- resume settings -----------------------------------------------------------------------------
    async def renew_launcher_for_resume(self, job: Obj, ext: Extensions, launcher: Obj | None) -> bool:
        """A resumed job whose annotations change what its launcher runs: the launcher Job, still
        suspended (so without pods) and made before the resume, goes; the sync after it is gone makes one
        with the resume's settings. True while that is under way: no launcher is made in this sync."""
        if launcher is None or not ext.modes.launcher_resume_settings(job):  # only once resumed
            return False
        meta = launcher["metadata"]
        suspended = bool(launcher.get("spec", {}).get("suspend"))
        if made_after_resume(launcher) or launcher_done(launcher) or not suspended:
            return False
        if self._deleted.seen(meta.get("uid", "")):
            return True
        await self._delete(JOBS, meta)
        message = f"Resumed: launcher Job {meta['name']} deleted, to be made again with the resume's settings"
        self._rec.record(job, NORMAL, REASON_LAUNCHER_RENEWED, message)
        return True

    def debug_status(
        self, job: Obj, ext: Extensions, status: Obj, launcher: Obj | None, now: dt.datetime
    ) -> None:
        if not ext.conveniences.debug_mode or conditions.is_finished(status):
            _drop(status, COND_DEBUG_MODE)
            return
        ns, name = job["metadata"].get("namespace", ""), job["metadata"]["name"]
        if launcher is not None and not made_for_debug(launcher):
            message = (
                f"MPIJob {ns}/{name} asks for debug mode after its launcher was made: "
                "the launcher runs the job's own command"
            )
            _put(status, COND_DEBUG_MODE, conditions.FALSE, REASON_DEBUG_TOO_LATE, message, now)
            return
        waits = command_line(list(ext.conveniences.debug_command))
        message = (
            f"MPIJob {ns}/{name} is in debug mode: the launcher runs `{waits}` instead of its command. "
            f"Open a shell in it with: {exec_line(job)}"
        )
        generated = generated_command(job, ext, HOSTFILE_PATH)
        if generated is not None:
            message += f" and run: {command_line(generated)}"
        if _put(status, COND_DEBUG_MODE, conditions.TRUE, REASON_DEBUG_MODE, message, now):
            self._rec.record(job, NORMAL, REASON_DEBUG_MODE, message)

    # --- the generated launcher command -------------------------------------------------------------
    def launcher_created(self, job: Obj, ext: Extensions, launcher: Obj) -> None:
        generated = generated_command(job, ext, HOSTFILE_PATH)
        if generated is None or not self._announced.first(launcher["metadata"].get("uid", "")):
            return
        line = command_line(generated)
        if made_for_debug(launcher):
            message = (
                f"Launcher {launcher['metadata']['name']} is in debug mode; the job's command is: {line}"
            )
        else:
            message = f"Launcher {launcher['metadata']['name']} runs: {line}"
        self._rec.record(job, NORMAL, REASON_COMMAND_GENERATED, message)

    async def _delete(self, res: Resource, meta: Obj) -> None:
        """Delete this object once (its uid a precondition): gone already (404) or replaced by another object
        of that name (409) is fine."""
        only = DeleteOptions(preconditions={"uid": meta.get("uid")})
        try:
            await self._w.delete(res, meta["name"], meta.get("namespace", ""), only)
        except (errors.NotFound, errors.Conflict):
            pass
        except errors.ApiError as exc:
            raise SyncError(f"deleting {res.plural} {meta['name']}: {exc.server_message}") from exc
        self._deleted.add(meta.get("uid", ""))


class ConveniencesFeature(Feature):
    def __init__(self, ports: FeaturePorts) -> None:
        self._conveniences = Conveniences(ports.listers, ports.writer, ports.recorder)
        self._children: ChildOperations = ports.children

    async def with_launcher(self, job: Obj, ext: Extensions, launcher: Obj | None) -> bool:
        await self._conveniences.end_debug_mode(job, ext, launcher)
        return await self._conveniences.renew_launcher_for_resume(job, ext, launcher)

    async def with_shared_children(self, job: Obj, ext: Extensions, now: dt.datetime) -> float | None:
        waits = await self._conveniences.ssh_secret(job, ext, job["status"], now, self._children)
        return SECRET_RECHECK_SECONDS if waits else None

    def launcher_created(self, job: Obj, ext: Extensions, launcher: Obj) -> None:
        self._conveniences.launcher_created(job, ext, launcher)

    def describe(self, job: Obj, ext: Extensions, status: Obj, seen: Seen) -> None:
        self._conveniences.debug_status(job, ext, status, seen.launcher, seen.now)
