"""MPIJobs by state, and how long the oldest one has been waiting to run, read from the informer cache.

The counters in `metrics.py` count events seen by one process: they restart at zero with the process and
a new leader never counts jobs created before it took over. A gauge computed from the cache at scrape time
is right from the first scrape after the caches sync, which is what a dashboard's "jobs by state" and an
alert on jobs stuck before Running need.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Iterable, Iterator
from typing import Any

from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from mpioperator.api import constants as api
from mpioperator.controller import conditions

Obj = dict[str, Any]

PENDING = "Pending"
STATES = (
    PENDING,
    api.COND_RUNNING,
    api.COND_RESTARTING,
    api.COND_SUSPENDED,
    api.COND_SUCCEEDED,
    api.COND_FAILED,
)


def job_state(job: Obj) -> str:
    """The one state a job is counted in: finished wins over suspended, which wins over running.

    `Pending` is every job not yet Running (only Created, or nothing yet); a job whose Running condition
    went False without finishing is `Restarting` if that condition is True, else Pending again.
    """
    status = job.get("status") or {}
    for state in (api.COND_SUCCEEDED, api.COND_FAILED, api.COND_SUSPENDED, api.COND_RUNNING):
        if conditions.is_true(status, state):
            return state
    if conditions.is_true(status, api.COND_RESTARTING):
        return api.COND_RESTARTING
    return PENDING


def waiting_since(job: Obj) -> dt.datetime | None:
    """When a pending job started waiting: its startTime (reset by a resume), else its creation."""
    status = job.get("status") or {}
    meta = job.get("metadata") or {}
    return conditions.parse_time(status.get("startTime")) or conditions.parse_time(
        meta.get("creationTimestamp")
    )


def state_families(jobs: Iterable[Obj], now: dt.datetime) -> list[Metric]:
    """`mpi_operator_jobs{namespace,state}` (every state of a namespace that has jobs, zeros included)
    and `mpi_operator_job_pending_oldest_seconds{namespace}` (namespaces with a pending job only)."""
    counts: dict[str, dict[str, int]] = {}
    oldest: dict[str, float] = {}
    for job in jobs:
        namespace = (job.get("metadata") or {}).get("namespace", "")
        state = job_state(job)
        per_state = counts.setdefault(namespace, dict.fromkeys(STATES, 0))
        per_state[state] += 1
        since = waiting_since(job) if state == PENDING else None
        if since is not None:
            waited = max(0.0, (now - since).total_seconds())
            oldest[namespace] = max(oldest.get(namespace, 0.0), waited)
    by_state = GaugeMetricFamily(
        "mpi_operator_jobs",
        "MPIJobs in the operator's cache, by namespace and state",
        labels=["namespace", "state"],
    )
    for namespace in sorted(counts):
        for state, count in counts[namespace].items():
            by_state.add_metric([namespace, state], count)
    pending = GaugeMetricFamily(
        "mpi_operator_job_pending_oldest_seconds",
        "Seconds the longest-waiting MPIJob that is not yet Running (nor suspended or finished) has waited",
        labels=["namespace"],
    )
    for namespace in sorted(oldest):
        pending.add_metric([namespace], oldest[namespace])
    return [by_state, pending]


class JobStateCollector(Collector):
    """Registered once per process. `jobs` returns None until this replica leads with synced caches, so
    a standby exports no samples and a sum over replicas counts each job once."""

    def __init__(self, jobs: Callable[[], list[Obj] | None], utcnow: Callable[[], dt.datetime]) -> None:
        self._jobs = jobs
        self._utcnow = utcnow

    def describe(self) -> Iterable[Metric]:
        # Nothing to check for duplicates up front: collect() needs the caches, describe() must not.
        return []

    def collect(self) -> Iterator[Metric]:
        jobs = self._jobs()
        if jobs is None:
            return
        yield from state_families(jobs, self._utcnow())
