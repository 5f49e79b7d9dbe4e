"""Prometheus series about MPIJobs: upstream's names and help texts, plus durations we add.

One instance per registry, so tests use a private registry and the process uses the default one.
"""

from __future__ import annotations

import contextlib
import datetime as dt
from collections.abc import Callable

from prometheus_client import REGISTRY, CollectorRegistry, Counter, Gauge, Histogram

from mpioperator.api import constants as api
from mpioperator.api.names import launcher_name
from mpioperator.api.objects import Obj
from mpioperator.controller import conditions

_DURATION_BUCKETS = (1, 5, 15, 30, 60, 120, 300, 600, 1800, 3600, 7200, 21600, 86400)
_RECONCILE_BUCKETS = (0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10)
RESULTS = ("succeeded", "failed")


class JobMetrics:
    def __init__(self, registry: CollectorRegistry = REGISTRY) -> None:
        self.registry = registry
        self.created = Counter(
            "mpi_operator_jobs_created", "Counts number of MPI jobs created", registry=registry
        )
        self.successful = Counter(
            "mpi_operator_jobs_successful", "Counts number of MPI jobs successful", registry=registry
        )
        self.failed = Counter(
            "mpi_operator_jobs_failed", "Counts number of MPI jobs failed", registry=registry
        )
        self.job_info = Gauge(
            "mpi_operator_job_info", "Information about MPIJob", ["launcher", "namespace"], registry=registry
        )
        self.is_leader = Gauge(
            "mpi_operator_is_leader",
            "Is this client the leader of this mpi-operator client set?",
            registry=registry,
        )
        self.job_duration = Histogram(
            "mpi_operator_job_duration_seconds",
            "Time from an MPIJob's start to its completion, by namespace and result",
            ["namespace", "result"],
            buckets=_DURATION_BUCKETS,
            registry=registry,
        )
        self.time_to_running = Histogram(
            "mpi_operator_job_time_to_running_seconds",
            "Time from an MPIJob's creation until its Running condition first became True",
            ["namespace"],
            buckets=_DURATION_BUCKETS,
            registry=registry,
        )
        self.reconcile_duration = Histogram(
            "mpi_operator_reconcile_duration_seconds",
            "Time spent in one sync of an MPIJob, by result",
            ["result"],
            buckets=_RECONCILE_BUCKETS,
            registry=registry,
        )
        self.reconcile_errors = Counter(
            "mpi_operator_reconcile_errors", "Syncs of an MPIJob that ended in an error", registry=registry
        )

    def forget_job(self, namespace: str, name: str) -> None:
        """Drop the per-job series of a deleted MPIJob (deliberately: upstream never removes them)."""
        with contextlib.suppress(KeyError):
            self.job_info.remove(f"{name}-launcher", namespace)

    def forget_deleted(self, namespace: str, name: str, *, namespace_empty: bool) -> None:
        """A deleted MPIJob's series, and its namespace's too when no MPIJob is left there."""
        self.forget_job(namespace, name)
        if namespace_empty:
            self.forget_namespace(namespace)

    def forget_namespace(self, namespace: str) -> None:
        """Drop the per-namespace histograms of a namespace that has no MPIJob left: each is a dozen
        series per namespace, and namespaces come and go (one per CI run, per user)."""
        with contextlib.suppress(KeyError):
            self.time_to_running.remove(namespace)
        for result in RESULTS:
            with contextlib.suppress(KeyError):
                self.job_duration.remove(namespace, result)

    def observe(
        self, job: Obj, old: Obj, new_status: Obj, launcher: Obj | None, utcnow: Callable[[], dt.datetime]
    ) -> None:
        """The series a sync's new status moves: the launcher's info, and a job that just finished or
        just started running (`old`: the status the sync started from)."""
        ns = job["metadata"].get("namespace", "")
        if launcher is not None:
            self.job_info.labels(launcher=launcher_name(job), namespace=ns).set(1)
        start = conditions.parse_time(new_status.get("startTime"))
        for cond_type, result in ((api.COND_SUCCEEDED, "succeeded"), (api.COND_FAILED, "failed")):
            if conditions.is_true(new_status, cond_type) and not conditions.is_true(old, cond_type):
                if cond_type == api.COND_SUCCEEDED:
                    self.successful.inc()
                elif (conditions.find(new_status, api.COND_FAILED) or {}).get("reason") != api.REASON_EVICTED:
                    self.failed.inc()
                end = conditions.parse_time(new_status.get("completionTime")) or utcnow()
                if start is not None:
                    self.job_duration.labels(namespace=ns, result=result).observe(
                        max(0.0, (end - start).total_seconds())
                    )
        if conditions.is_true(new_status, api.COND_RUNNING) and not conditions.is_true(old, api.COND_RUNNING):
            created = conditions.parse_time(job["metadata"].get("creationTimestamp"))
            if created is not None:
                self.time_to_running.labels(namespace=ns).observe(
                    max(0.0, (utcnow() - created).total_seconds())
                )
