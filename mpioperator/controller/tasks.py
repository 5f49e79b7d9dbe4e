"""`status.aggregate` and `status.tasks`: the job's pods as T9k's MPIJob shows them (docs/extensions.md).

`aggregate` counts each pod the job wants once, job-wide: not made yet (`creating`), being deleted
(`deleted`), else by its phase. `tasks` lists per replica type its pods' names, uids, phases and restarts,
at most MAX_TASK_PODS of each type (workers by index, the launcher's newest first) with the number left
out, so a job of thousands of pods keeps a status of a few kilobytes.
"""

from __future__ import annotations

from mpioperator.api import accessors
from mpioperator.api import constants as api
from mpioperator.api.objects import Obj
from mpioperator.controller.pod_state import PodStates

MAX_TASK_PODS = 32
AGGREGATE_KEYS = ("creating", "pending", "running", "succeeded", "failed", "unknown", "deleted")
_PHASE_KEYS = {"Pending": "pending", "Running": "running", "Succeeded": "succeeded", "Failed": "failed"}
# A launcher pod in one of these phases stands for the launcher: no other is being made.
_LAUNCHER_PRESENT = ("Pending", "Running", "Succeeded", "Unknown")


def unknown(launcher_pods: list[Obj], workers: list[Obj], states: PodStates | None = None) -> bool:
    """Whether the API server says the state of one of the job's pods could not be obtained (phase
    Unknown: a node that stopped reporting, as virtual kubelets say it). `states`: the sync's pod
    descriptions (pod_state.py)."""
    states = states or PodStates()
    return any(
        (state := states.of(p)).phase_or_pending == "Unknown" and not state.deleting
        for p in (*launcher_pods, *workers)
    )


def aggregate(
    job: Obj,
    launcher_pods: list[Obj],
    workers: list[Obj],
    *,
    wants_pods: bool,
    states: PodStates | None = None,
) -> dict[str, int]:
    """Every key of AGGREGATE_KEYS, zeros included, so a printer column never reads `<none>`.

    `wants_pods` is False for a suspended or finished job: it makes no pods, so none is `creating`."""
    states = states or PodStates()
    tally = dict.fromkeys(AGGREGATE_KEYS, 0)
    for pod in (*launcher_pods, *workers):
        state = states.of(pod)
        if state.deleting:
            tally["deleted"] += 1
        else:
            tally[_PHASE_KEYS.get(state.phase_or_pending, "unknown")] += 1
    if wants_pods:
        live = {p["metadata"].get("name") for p in workers if not states.of(p).deleting}
        wanted = accessors.worker_replicas(job) if accessors.replica_spec(job, api.WORKER) else 0
        tally["creating"] += max(0, wanted - len(live))
        present = any(
            (state := states.of(p)).phase_or_pending in _LAUNCHER_PRESENT and not state.deleting
            for p in launcher_pods
        )
        if accessors.replica_spec(job, api.LAUNCHER) and not present:
            tally["creating"] += 1
    return tally


def _entry(pod: Obj, states: PodStates) -> Obj:
    meta = pod.get("metadata") or {}
    state = states.of(pod)
    entry: Obj = {
        "name": meta.get("name", ""),
        "uid": meta.get("uid", ""),
        "phase": state.phase_or_pending,
        "restartCount": state.restarts,
    }
    if state.deleting:
        entry["deleting"] = True
    return entry


def _task(replica_type: str, pods: list[Obj], states: PodStates) -> Obj:
    task: Obj = {
        "type": replica_type,
        "restartCount": sum(states.of(p).restarts for p in pods),
        "pods": [_entry(p, states) for p in pods[:MAX_TASK_PODS]],
    }
    if len(pods) > MAX_TASK_PODS:
        task["truncated"] = len(pods) - MAX_TASK_PODS
    return task


def _index(pod: Obj) -> int:
    suffix = str((pod.get("metadata") or {}).get("name", "")).rpartition("-")[2]
    return int(suffix) if suffix.isascii() and suffix.isdigit() else -1


def tasks(launcher_pods: list[Obj], workers: list[Obj], states: PodStates | None = None) -> list[Obj]:
    """`[{type: Launcher, ...}, {type: Worker, ...}]`, both always."""
    states = states or PodStates()
    newest_first = sorted(
        launcher_pods, key=lambda p: (p.get("metadata") or {}).get("creationTimestamp") or "", reverse=True
    )
    by_index = sorted(workers, key=lambda p: states.fact(p, "index from name", _index))
    return [_task(api.LAUNCHER, newest_first, states), _task(api.WORKER, by_index, states)]
