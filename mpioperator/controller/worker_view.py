"""A job's worker pods as the children step reads them, kept while the pods are unchanged.

A running job's sync used to select its pods by label, index them by name and filter them several times,
each a walk over every worker, to find them as at its last sync. A lister that versions its selections
(ports.VersionedLister) lets the view be reused as long as the version and the job's fields it depends on
are the same, so an unchanged job's children step looks at none of its pods. Without such a lister (the
in-memory fakes), the view is made anew each time.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Hashable
from dataclasses import dataclass, field

from mpioperator.api import accessors, names
from mpioperator.api import constants as api
from mpioperator.api.objects import Obj
from mpioperator.api.ownership import is_controlled_by
from mpioperator.controller.ports import Lister, VersionedLister
from mpioperator.controller.same_objects import Carried, carried


def worker_selector(job: Obj) -> dict[str, str]:
    return {
        api.LABEL_OPERATOR_NAME: api.OPERATOR_NAME,
        api.LABEL_JOB_NAME: job["metadata"]["name"],
        api.LABEL_JOB_ROLE: api.ROLE_WORKER,
    }


# Per pod object: the index its name says for the job, whether the job controls it.
_Facts = Carried[tuple[int | None, bool]]


@dataclass(slots=True)
class WorkerView:
    """One reading of a job's worker pods. Its lists are shared: callers must not change them."""

    listed: list[Obj]  # the pods with the job's worker labels
    by_index: list[Obj | None]  # the listed pod of each index the spec asks for, by its name
    controlled: list[Obj]  # the listed pods the job controls: its hosts (decisions-local L36)
    running: list[Obj]  # those of them Running
    present: list[Obj]  # the pods of by_index, in index order
    complete: bool  # every index has a listed pod and the job controls each
    # What the ConfigMap step derived from this view (its hostfile inputs), by what else it depends on.
    derived: dict[Hashable, Hashable] = field(default_factory=dict)
    # What each listed pod's name and owners said, for the next reading of the same job.
    facts: _Facts = field(default_factory=dict)


def hostfile_key(job: Obj) -> Hashable:
    """The job's fields its hostfile inputs may depend on: those the ConfigMap builder reads, and its
    generation and annotations for what features add (the addresses the hostfile lists)."""
    meta = job["metadata"]
    return (
        meta["name"],
        meta.get("namespace", ""),
        meta.get("generation"),
        tuple(sorted((meta.get("annotations") or {}).items())),
        accessors.slots_per_worker(job),
        accessors.run_launcher_as_worker(job),
        accessors.worker_replicas(job),
        accessors.mpi_implementation(job),
    )


def _read(job: Obj, listed: list[Obj], before: _Facts) -> WorkerView:
    """The view of `listed`; a pod that is the very same object as in the job's last reading (`before`)
    keeps what its name and owners said then: a big job whose one pod changed reads that pod anew."""
    by_index: list[Obj | None] = [None] * accessors.worker_replicas(job)

    def said(pod: Obj) -> tuple[int | None, bool]:
        return names.worker_index(job, pod["metadata"]["name"]), is_controlled_by(pod, job)

    facts = carried(listed, before, said)
    controlled: list[Obj] = []
    running: list[Obj] = []
    for pod in listed:
        index, ours = facts[id(pod)][1]
        if index is not None and index < len(by_index):
            by_index[index] = pod
        if ours:
            controlled.append(pod)
            if pod.get("status", {}).get("phase") == "Running":
                running.append(pod)
    present = [p for p in by_index if p is not None]
    complete = len(present) == len(by_index) and all(facts[id(p)][1][1] for p in present)
    return WorkerView(listed, by_index, controlled, running, present, complete, facts=facts)


class WorkerViews:
    """The last view of each job (by uid), while its pods are the same; at most `capacity` pods held, the
    least recently read jobs forgotten first."""

    def __init__(self, capacity: int = 50_000) -> None:
        self._views: OrderedDict[str, tuple[Hashable, WorkerView]] = OrderedDict()
        self._held = 0
        self._capacity = capacity

    def read(self, job: Obj, pods: Lister) -> WorkerView:
        meta = job["metadata"]
        ns, uid = meta.get("namespace", ""), meta.get("uid", "")
        selector = worker_selector(job)
        version = pods.select_version(ns, selector) if isinstance(pods, VersionedLister) else None
        key = (version, meta["name"], uid, accessors.worker_replicas(job))
        kept = self._views.get(uid) if uid and version is not None else None
        if kept is not None and kept[0] == key:
            self._views.move_to_end(uid)
            return kept[1]
        # The last reading's per-pod answers hold for the same job: the uid names it, and its name with it.
        view = _read(job, pods.select(ns, selector), kept[1].facts if kept is not None else {})
        if uid and version is not None:
            self._remember(uid, key, view)
        return view

    def forget(self, uid: str) -> None:
        """The job finished or went: its view would only hold its old pods in memory."""
        old = self._views.pop(uid, None)
        if old is not None:
            self._held -= len(old[1].listed)

    def holds(self, uid: str) -> bool:
        return uid in self._views

    def _remember(self, uid: str, key: Hashable, view: WorkerView) -> None:
        self.forget(uid)
        self._views[uid] = (key, view)
        self._held += len(view.listed)
        while self._held > self._capacity and len(self._views) > 1:
            _, (_, dropped) = self._views.popitem(last=False)
            self._held -= len(dropped.listed)
