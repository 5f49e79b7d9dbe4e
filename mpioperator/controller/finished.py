"""A finished job's own steps: upstream's eviction completed, the launcher that gave up, the TTL."""

from __future__ import annotations

import contextlib
import datetime as dt

from mpioperator.api import accessors, names
from mpioperator.api import constants as api
from mpioperator.api.objects import Obj
from mpioperator.controller import conditions, host_wait
from mpioperator.controller.ports import Listers, Writer
from mpioperator.kube import errors
from mpioperator.kube.delete_options import DeleteOptions
from mpioperator.kube.resources import MPIJOBS


def complete_upstream_eviction(status: Obj) -> None:
    """Deliberately unlike upstream, for a job evicted under upstream, which leaves it Failed without a
    completionTime: it is finished, and its completionTime is when it failed, so it is not synced as a running
    job again (which would create its missing workers)."""
    failed = conditions.find(status, api.COND_FAILED)
    if status.get("completionTime") or failed is None or failed.get("status") != "True":
        return
    if failed.get("reason") == api.REASON_EVICTED:
        status["completionTime"] = failed.get("lastTransitionTime") or failed.get("lastUpdateTime")


def launcher_gave_up(listers: Listers, job: Obj) -> bool:
    """Whether the launcher's wait-for-hosts gave up: its pod would only wait again (host_wait.py)."""
    launcher = listers.jobs.get(job["metadata"]["namespace"], names.launcher_name(job))
    if launcher is None:
        return False
    return bool(host_wait.gave_up(listers.pods.owned_by(launcher["metadata"].get("uid", ""))))


async def expire(writer: Writer, job: Obj, now: dt.datetime) -> float | None:
    """Deliberately unlike upstream: after ttlSecondsAfterFinished the MPIJob itself goes, not only its
    launcher. The seconds until then, if it is not yet time."""
    ttl = accessors.ttl_seconds_after_finished(job)
    finished = conditions.parse_time(job["status"].get("completionTime"))
    if ttl is None or finished is None:
        return None
    remaining = (finished + dt.timedelta(seconds=ttl) - now).total_seconds()
    if remaining > 0:
        return remaining
    meta = job["metadata"]
    # Gone already (404), or a new job of that name that the uid precondition protects (409): either
    # way the job this TTL was for no longer exists, and nothing is left to retry.
    with contextlib.suppress(errors.NotFound, errors.Conflict):
        await writer.delete(
            MPIJOBS, meta["name"], meta.get("namespace"), DeleteOptions.if_uid(meta.get("uid"))
        )
    return None
