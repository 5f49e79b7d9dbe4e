"""A worker taken away by the cluster, told by pod and node; one lost with its node fails the job
(docs/extensions.md, the `WorkerLost` condition; decisions-local L51).

Kubernetes marks a pod it is about to end for a reason of the cluster's with the `DisruptionTarget`
condition: the taint manager's (a NoExecute taint of its node, such as `unreachable` or `not-ready` held
longer than the pod tolerates), the eviction API's (a drain), the scheduler's (preemption) or the
kubelet's. The pod cache keeps that condition's reason and the pod's node, and for a job its restart policy
does not restart (none, or its restarts used up) this feature:

* says which workers went, on which nodes and how, in a `WorkerLost` condition of ours, with one Warning
  event. The condition stays, so once the pod is gone and made again (upstream's way) the Failed message of
  a later launcher failure still names it (`failure_detail`);
* fails the job at once when the taint manager deleted a worker. Its node has stopped answering: no
  kubelet will confirm the pod's end, so its name is never free for upstream to make it again, and mpirun
  waits on a rank that cannot answer until TCP gives up, about 15 minutes, holding the other workers.
  Every other disruption ends the pod for real: upstream makes it again once it is gone, and the
  launcher's retry (its backoffLimit) or an elastic job may carry on, so the job is left to that.
"""

from __future__ import annotations

import datetime as dt
from collections import OrderedDict
from dataclasses import dataclass

from mpioperator.api import constants as api
from mpioperator.api.extensions import restarts as policy
from mpioperator.api.extensions.parsed import Extensions
from mpioperator.api.objects import Obj, json_copy
from mpioperator.api.ownership import is_controlled_by
from mpioperator.controller import conditions
from mpioperator.controller.events import WARNING, truncate_message
from mpioperator.controller.feature import Feature, FeaturePorts, Seen, Stop
from mpioperator.controller.phase import FAILED
from mpioperator.controller.same_objects import Carried, carried

COND_WORKER_LOST = "WorkerLost"
REASON_WORKER_LOST = "MPIJobWorkerLost"
DISRUPTION_TARGET = "DisruptionTarget"
BY_TAINT_MANAGER = "DeletionByTaintManager"
# How each of Kubernetes' disruption reasons ends a pod, in the words of the condition.
_HOW = {
    BY_TAINT_MANAGER: "was deleted by the taint manager (a NoExecute taint of its node, such as unreachable "
    "or not-ready held longer than the pod tolerates)",
    "EvictionByEvictionAPI": "was evicted",
    "PreemptionByScheduler": "was preempted by the scheduler",
    "TerminationByKubelet": "was ended by its kubelet",
}
MAX_NAMED = 3


@dataclass(frozen=True, slots=True)
class Loss:
    pod: str
    node: str
    reason: str

    def __str__(self) -> str:
        where = f" on node {self.node}" if self.node else ""
        how = _HOW.get(self.reason, f"was disrupted ({self.reason})")
        return f"worker {self.pod}{where} {how}"


_KEPT_JOBS = 20_000


@dataclass(frozen=True, slots=True)
class _Read:
    """One reading of a job's workers for their losses."""

    workers: list[Obj]
    attempt: int
    lost: list[Loss]
    disrupted: Carried[bool]


def disruption(pod: Obj) -> str | None:
    """The reason of the pod's DisruptionTarget condition when it is True, else None."""
    for cond in (pod.get("status") or {}).get("conditions") or ():
        if cond.get("type") == DISRUPTION_TARGET and cond.get("status") == "True":
            return str(cond.get("reason") or "")
    return None


def losses(workers: list[Obj]) -> list[Loss]:
    found = []
    for pod in workers:
        reason = disruption(pod)
        if reason is not None:
            node = (pod.get("spec") or {}).get("nodeName") or ""
            found.append(Loss(pod["metadata"]["name"], str(node), reason))
    return sorted(found, key=lambda loss: loss.pod)


def describe(lost: list[Loss]) -> str:
    named = ", ".join(str(loss) for loss in lost[:MAX_NAMED])
    more = len(lost) - MAX_NAMED
    return f"{named} and {more} more" if more > 0 else named


def _left_to_policy(job: Obj, ext: Extensions) -> bool:
    """Whether the restart policy restarts the job for a lost worker (restarts.py says how)."""
    asked = ext.restarts
    return asked.enabled and policy.restarts(job.get("status") or {}) < asked.max_restarts


def _noted(status: Obj, lost: list[Loss], now: dt.datetime) -> str | None:
    """Put the losses not yet told into the WorkerLost condition; its new message, or None if none is new."""
    current = conditions.find(status, COND_WORKER_LOST) or {}
    told = str(current.get("message") or "") if current.get("status") == "True" else ""
    new = [loss for loss in lost if f"worker {loss.pod} " not in told]
    if not new:
        return None
    message = truncate_message(f"{told}, {describe(new)}" if told else describe(new))
    reason = str(current.get("reason") or "") if told else new[0].reason
    conditions.put(status, COND_WORKER_LOST, "True", reason or REASON_WORKER_LOST, message, now)
    return message


def told(job: Obj) -> str:
    """What the job's WorkerLost condition says, or ""."""
    current = conditions.find(job.get("status") or {}, COND_WORKER_LOST) or {}
    return str(current.get("message") or "") if current.get("status") == "True" else ""


class WorkerLossFeature(Feature):
    def __init__(self, ports: FeaturePorts) -> None:
        self._children = ports.children
        self._rec = ports.recorder
        self._write_status = ports.write_status
        # Per job (by uid): the worker list last read, its attempt, its losses, and whether each of its pods
        # was disrupted. The children step hands over the very same list while the job's pods are unchanged
        # (decisions-local L52), so an unchanged job's losses are not looked for again among all its
        # workers, and a changed one's only among the pods that changed.
        self._losses: OrderedDict[str, _Read] = OrderedDict()

    def _lost(self, job: Obj) -> list[Loss]:
        attempt = policy.current_attempt(job)
        workers = self._children.present_workers(job)
        uid = job["metadata"].get("uid", "")
        kept = self._losses.get(uid)
        if kept is not None and kept.workers is workers and kept.attempt == attempt:
            return list(kept.lost)
        # The rare condition first, asked of the pods changed since the last reading only: of a big job's
        # workers, only the disrupted ones are asked the rest.
        asked = carried(workers, kept.disrupted if kept else {}, lambda pod: disruption(pod) is not None)
        disrupted = [pod for pod in workers if asked[id(pod)][1]]
        lost = losses(
            [pod for pod in disrupted if is_controlled_by(pod, job) and policy.attempt_of(pod) == attempt]
        )
        if uid:
            self._losses[uid] = _Read(workers, attempt, lost, asked)
            self._losses.move_to_end(uid)
            while len(self._losses) > _KEPT_JOBS:
                self._losses.popitem(last=False)
        return list(lost)

    def forget(self, uid: str) -> None:
        self._losses.pop(uid, None)

    async def before_children(
        self, cached: Obj, job: Obj, ext: Extensions, now: dt.datetime, suspended: bool
    ) -> Stop | None:
        """A worker lost with its node fails the job: written here, and the sync ends (the next one finds
        the job finished and cleans up per cleanPodPolicy)."""
        if suspended or _left_to_policy(job, ext):
            return None
        lost = self._lost(job)
        with_node = [loss for loss in lost if loss.reason == BY_TAINT_MANAGER]
        if not with_node:
            return None
        ns, name = job["metadata"].get("namespace", ""), job["metadata"]["name"]
        status = json_copy(job.get("status") or {})
        noted = _noted(status, lost, now)
        message = truncate_message(f"MPIJob {ns}/{name} has failed: {describe(with_node)}")
        failed = conditions.new_condition(api.COND_FAILED, "True", REASON_WORKER_LOST, message, now)
        conditions.set_condition(status, failed)
        status.setdefault("completionTime", conditions.format_time(now))
        status["phase"] = FAILED
        if not await self._write_status(cached, status):
            return Stop(0.0)  # the job is gone
        if noted is not None:
            self._rec.record(job, WARNING, REASON_WORKER_LOST, noted)
        self._rec.record(job, WARNING, REASON_WORKER_LOST, message)
        job["status"] = status
        return Stop(0.0)

    def failure_detail(self, job: Obj, ext: Extensions, detail: str) -> str:
        """The lost workers first: a launcher's last words after them may be long and cut."""
        lost = told(job) or describe(self._lost(job))
        if not lost:
            return detail
        return f"{lost}; {detail}" if detail else lost

    def describe(self, job: Obj, ext: Extensions, status: Obj, seen: Seen) -> None:
        """Any other disruption is told in the WorkerLost condition (once, with a Warning event)."""
        if _left_to_policy(job, ext):
            return
        noted = _noted(status, self._lost(job), seen.now)
        if noted is not None:
            self._rec.record(job, WARNING, REASON_WORKER_LOST, noted)
