"""Elastic bounds (docs/extensions.md, `mpioperator.io/min-workers` and `mpioperator.io/max-workers`).

A job whose spec asks for more workers than its maximum, or fewer than its minimum (`kubectl scale`, an
autoscaler, an edit), runs the nearest bound: the sync's children step sees the clamped count, so no
worker beyond the maximum is made and none under the minimum is removed. The condition
`WorkersOutOfBounds` and one Warning event say so while it lasts (decisions-local L50).

A job with bounds also gets `status.replicaStatuses.Worker.selector`, the workers' label selector, which
the scale subresource's labelSelectorPath names, so a HorizontalPodAutoscaler finds the pods it measures.
"""

from __future__ import annotations

import datetime as dt

from mpioperator.api import constants as api
from mpioperator.api.extensions import elastic
from mpioperator.api.extensions.parsed import Extensions
from mpioperator.api.objects import Obj
from mpioperator.controller import conditions
from mpioperator.controller.events import WARNING
from mpioperator.controller.feature import Feature, FeaturePorts, Seen

COND_OUT_OF_BOUNDS = "WorkersOutOfBounds"
REASON_CLAMPED = "WorkerReplicasClamped"


def worker_selector(job: Obj) -> str:
    """The label selector of the job's workers, as text (the scale subresource's labelSelectorPath)."""
    name = job["metadata"]["name"]
    return f"{api.LABEL_JOB_NAME}={name},{api.LABEL_JOB_ROLE}={api.ROLE_WORKER}"


class ElasticBoundsFeature(Feature):
    def __init__(self, ports: FeaturePorts) -> None:
        self._rec = ports.recorder
        # The clamp of the job this sync runs, from before its children to its status (a sync that ends
        # in between leaves one entry, replaced by the job's next sync).
        self._clamped: dict[str, elastic.Clamp] = {}

    async def before_children(
        self, cached: Obj, job: Obj, ext: Extensions, now: dt.datetime, suspended: bool
    ) -> None:
        uid = job["metadata"].get("uid", "")
        found = elastic.clamp_to(job, ext.bounds)
        if found is None:
            self._clamped.pop(uid, None)
            return None
        job["spec"]["mpiReplicaSpecs"][api.WORKER]["replicas"] = found.runs
        self._clamped[uid] = found
        return None

    def describe(self, job: Obj, ext: Extensions, status: Obj, seen: Seen) -> None:
        found = ext.bounds
        if found is None:
            conditions.drop(status, COND_OUT_OF_BOUNDS)
            return
        workers = (status.get("replicaStatuses") or {}).get(api.WORKER)
        if isinstance(workers, dict):
            workers["selector"] = worker_selector(job)
        asked = self._clamped.pop(job["metadata"].get("uid", ""), None)
        if asked is None:
            conditions.drop(status, COND_OUT_OF_BOUNDS)  # our conditions go once what they say is over
            return
        message = asked.message(found)
        if conditions.put(status, COND_OUT_OF_BOUNDS, "True", REASON_CLAMPED, message, seen.now):
            self._rec.record(job, WARNING, REASON_CLAMPED, message)
