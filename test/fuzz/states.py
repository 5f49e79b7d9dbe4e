"""Random observations of a job's children, as the caches could show them: the launcher Job and its pods,
the worker pods, and the status the MPIJob already carries."""

from __future__ import annotations

import datetime as dt

from hypothesis import strategies as st

from mpioperator.api.objects import Obj

PHASES = ("Pending", "Running", "Succeeded", "Failed")
T0 = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)


def moments() -> st.SearchStrategy[dt.datetime]:
    return st.integers(0, 10**6).map(lambda s: T0 + dt.timedelta(seconds=s))


def stamp(when: dt.datetime) -> str:
    return when.strftime("%Y-%m-%dT%H:%M:%SZ")


@st.composite
def pod(draw: st.DrawFn, name: str) -> Obj:
    status: Obj = {"phase": draw(st.sampled_from(PHASES))}
    if status["phase"] == "Failed" and draw(st.booleans()):
        status["reason"] = draw(st.sampled_from(("Evicted", "DeadlineExceeded", "")))
        status["message"] = draw(st.text(max_size=30))
    if draw(st.booleans()):
        status["conditions"] = [{"type": "Ready", "status": draw(st.sampled_from(("True", "False")))}]
    return {
        "metadata": {"name": name, "creationTimestamp": stamp(draw(moments()))},
        "status": status,
    }


@st.composite
def launcher_job(draw: st.DrawFn) -> Obj:
    status: Obj = {}
    for field in ("active", "failed", "succeeded"):
        if draw(st.booleans()):
            status[field] = draw(st.integers(0, 3))
    ending = draw(st.sampled_from((None, "Complete", "Failed")))
    if ending is not None:
        condition: Obj = {"type": ending, "status": draw(st.sampled_from(("True", "False")))}
        if ending == "Failed":
            condition["reason"] = draw(
                st.sampled_from(("BackoffLimitExceeded", "DeadlineExceeded", "", None))
            )
            condition["message"] = draw(st.text(max_size=30))
        status["conditions"] = [condition]
    if draw(st.booleans()):
        status["completionTime"] = stamp(draw(moments()))
    if draw(st.booleans()):
        status["startTime"] = stamp(draw(moments()))
    return {"metadata": {"name": "launcher", "uid": "launcher-uid"}, "spec": {}, "status": status}


CONDITION_TYPES = ("Created", "Running", "Restarting", "Succeeded", "Suspended", "Failed")
REASONS = ("MPIJobCreated", "MPIJobRunning", "MPIJobSuspended", "MPIJobResumed", "MPIJobEvicted", "Other")


@st.composite
def prior_status(draw: st.DrawFn) -> Obj:
    """What an earlier sync may have written: conditions (one per type), start and completion times."""
    kinds = draw(st.lists(st.sampled_from(CONDITION_TYPES), unique=True, max_size=4))
    status: Obj = {}
    if kinds:
        status["conditions"] = [
            {
                "type": kind,
                "status": draw(st.sampled_from(("True", "False"))),
                "reason": draw(st.sampled_from(REASONS)),
                "message": "earlier",
                "lastUpdateTime": stamp(T0),
                "lastTransitionTime": stamp(T0),
            }
            for kind in kinds
        ]
    for field in ("startTime", "completionTime"):
        if draw(st.booleans()):
            status[field] = stamp(draw(moments()))
    return status
