"""In-memory implementations of the sync handler's seams (controller/ports.py), in sample-controller's
fixture style: the caches hold what a test gives, the writer records every call it is asked to make.

`Scene(job, *children).sync()` runs one reconcile of the job's key and leaves the calls in
`scene.writer.calls` (verb, resource, name) and the events in `scene.recorder.events`. The objects are
stamped as the informers keep them (kind set, uid and resourceVersion present; a Secret with its key names
only, while the writer's `get` answers it whole, as the API server would); the API server's own
behaviour (admission, conflicts, garbage collection) is not imitated: what needs it is tested against a
real API server in test/integration/controller/.
"""

from __future__ import annotations

import copy
import itertools
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, cast

import orjson
from prometheus_client import CollectorRegistry

from mpioperator.api import names
from mpioperator.api.objects import Obj
from mpioperator.cache.informer import SharedInformer
from mpioperator.cache.store import Store
from mpioperator.clock import FakeClock
from mpioperator.controller.builders import configmap, secret, service
from mpioperator.controller.decorators import compose
from mpioperator.controller.features import default_features
from mpioperator.controller.listers import POD_INDEXERS, StoreLister
from mpioperator.controller.metrics import JobMetrics
from mpioperator.controller.ports import Listers, PodLogs
from mpioperator.controller.secret_cache import SECRET_CACHE_PROJECTION
from mpioperator.controller.sync import JobSyncer, SyncResult, SyncSettings
from mpioperator.controller.tasks import AGGREGATE_KEYS
from mpioperator.kube import errors
from mpioperator.kube.delete_options import BACKGROUND, DeleteOptions
from mpioperator.kube.log_options import WHOLE_LOG, LogOptions
from mpioperator.kube.resources import Resource
from test.unit.controller.jobs import reference_job

# Every wall-clock stamp a sync writes is this instant (FakeClock's wall time at its start).
NOW = "2026-01-01T00:00:00Z"
EARLIER = "2025-12-31T23:00:00Z"


class MemoryLister:
    """One kind's cache: the objects a test put there, looked up as the informer-backed lister does."""

    def __init__(self, objects: list[Obj]) -> None:
        self._objects = objects

    def objects(self) -> list[Obj]:
        """Everything in this cache, in the order it was put there."""
        return list(self._objects)

    def discard(self, namespace: str, name: str) -> None:
        """The object leaves the cache, as a delete event takes it out of the informer's store."""
        self._objects[:] = [
            o
            for o in self._objects
            if (o["metadata"].get("namespace", ""), o["metadata"]["name"]) != (namespace, name)
        ]

    def get(self, namespace: str, name: str) -> Obj | None:
        for obj in self._objects:
            meta = obj["metadata"]
            if meta.get("namespace", "") == namespace and meta["name"] == name:
                return obj
        return None

    def select(self, namespace: str, labels: Mapping[str, str]) -> list[Obj]:
        return [
            obj
            for obj in self._objects
            if obj["metadata"].get("namespace", "") == namespace
            and all((obj["metadata"].get("labels") or {}).get(k) == v for k, v in labels.items())
        ]

    def owned_by(self, uid: str) -> list[Obj]:
        return [
            obj
            for obj in self._objects
            if any(
                ref.get("controller") and ref.get("uid") == uid
                for ref in obj["metadata"].get("ownerReferences") or ()
            )
        ]


@dataclass(frozen=True, slots=True)
class Call:
    verb: str
    resource: str
    name: str
    body: Obj | None


class RecordingWriter:
    """Answers every write as an API server that accepts it would, and records it."""

    def __init__(self) -> None:
        self.log: list[Call] = []
        self._uids = itertools.count(1)
        # What `get` answers, by (resource, name): the objects as the server has them.
        self.served: dict[tuple[str, str], Obj] = {}

    @property
    def calls(self) -> list[tuple[str, str, str]]:
        return [(c.verb, c.resource, c.name) for c in self.log]

    def body(self, verb: str, resource: str, name: str) -> Obj:
        for call in self.log:
            if (call.verb, call.resource, call.name) == (verb, resource, name) and call.body is not None:
                return call.body
        raise AssertionError(f"no {verb} of {resource}/{name} among {self.calls}")

    def _record(self, verb: str, res: Resource, name: str, body: Obj | None) -> None:
        self.log.append(Call(verb, res.plural, name, copy.deepcopy(body)))

    async def get(self, res: Resource, name: str, namespace: str | None = None) -> Obj:
        self._record("get", res, name, None)
        found = self.served.get((res.plural, name))
        if found is None:
            raise errors.NotFound(404, "NotFound", f'{res.plural} "{name}" not found')
        return copy.deepcopy(found)

    async def create(self, res: Resource, body: Obj, namespace: str | None = None) -> Obj:
        self._record("create", res, body["metadata"]["name"], body)
        made = copy.deepcopy(body)
        made["metadata"].update(uid=f"created-{next(self._uids)}", resourceVersion="1")
        return made

    async def update(self, res: Resource, body: Obj, namespace: str | None = None) -> Obj:
        self._record("update", res, body["metadata"]["name"], body)
        return copy.deepcopy(body)

    async def update_status(self, res: Resource, body: Obj, namespace: str | None = None) -> Obj:
        self._record("update_status", res, body["metadata"]["name"], body)
        return copy.deepcopy(body)

    async def patch(
        self, res: Resource, name: str, body: Obj | list[Any], namespace: str | None = None, **_: Any
    ) -> Obj:
        self._record("patch", res, name, body if isinstance(body, dict) else {"patch": body})
        return {}

    async def delete(
        self, res: Resource, name: str, namespace: str | None = None, options: DeleteOptions = BACKGROUND
    ) -> Obj:
        self._record("delete", res, name, None)
        return {}


class MemoryLogs:
    """Pods' logs by name, as the kubelet would serve them; records each read."""

    def __init__(self, logs: dict[str, str] | None = None) -> None:
        self.logs = dict(logs or {})
        self.reads: list[tuple[str, int | None, int | None]] = []

    async def pod_log(self, name: str, namespace: str, options: LogOptions = WHOLE_LOG) -> str:
        tail_lines, limit_bytes = options.tail_lines, options.limit_bytes
        self.reads.append((name, tail_lines, limit_bytes))
        if name not in self.logs:
            raise errors.NotFound(404, "NotFound", f'pods "{name}" not found')
        lines = self.logs[name].splitlines(keepends=True)
        text = "".join(lines[-tail_lines:] if tail_lines else lines)
        return text[:limit_bytes] if limit_bytes else text


class RecordingRecorder:
    def __init__(self) -> None:
        self.events: list[tuple[str, str, str]] = []

    def record(self, obj: Obj, event_type: str, reason: str, message: str) -> None:
        self.events.append((event_type, reason, message))


_LISTS = {"MPIJob": "mpijobs", "Pod": "pods", "Job": "jobs", "ConfigMap": "config_maps"}
_LISTS |= {"Secret": "secrets", "Service": "services"}


class Scene:
    """The caches hold `job` and `children`; `sync()` runs one reconcile of the job's key."""

    def __init__(
        self,
        job: Obj,
        *children: Obj,
        writer: RecordingWriter | None = None,
        settings: SyncSettings | None = None,
        logs: PodLogs | None = None,
    ) -> None:
        self.job = job
        # The tests of a failed rank's last words read back what was read (MemoryLogs.reads).
        self.logs: Any = logs or MemoryLogs()
        kinds: dict[str, list[Obj]] = {attr: [] for attr in _LISTS.values()}
        self.writer = writer or RecordingWriter()
        for obj in (job, *children):
            if obj["kind"] == "Secret":
                self.writer.served[("secrets", obj["metadata"]["name"])] = obj
                obj = _as_the_secret_cache_keeps_it(obj)
            kinds[_LISTS[obj["kind"]]].append(obj)
        self.memory = {attr: MemoryLister(objects) for attr, objects in kinds.items()}
        self.listers = Listers(**self.memory)
        self.recorder = RecordingRecorder()
        self.clock = FakeClock()
        self.registry = CollectorRegistry()
        self.metrics = JobMetrics(self.registry)
        self.syncer = self.syncer_with(
            settings=settings, features=default_features, logs=self.logs, clock=self.clock
        )

    def syncer_with(self, **options: Any) -> JobSyncer:
        """A JobSyncer over this scene's caches, writer, recorder, metrics and wall clock, made with
        `options` (JobSyncer's keyword arguments)."""
        return JobSyncer(
            self.listers, self.writer, self.recorder, self.metrics, utcnow=self.clock.utcnow, **options
        )

    async def sync(self, key: str | None = None) -> SyncResult:
        meta = self.job["metadata"]
        return await self.syncer.sync(key or f"{meta['namespace']}/{meta['name']}")

    def counter(self, name: str) -> float:
        """A counter of the job metrics, as /metrics shows it (`<name>_total`)."""
        return self.registry.get_sample_value(f"{name}_total") or 0.0

    def written_status(self) -> Obj:
        status: Obj = self.writer.body("update_status", "mpijobs", self.job["metadata"]["name"])["status"]
        return status


class IndexedStore:
    """The part of a SharedInformer a StoreLister reads: its namespace (all) and its store, indexed as in
    the operator (the pods by job name), so a sync reads the caches as the operator's informers serve them."""

    namespace: str | None = None

    def __init__(self, objects: list[Obj]) -> None:
        self.store = Store(POD_INDEXERS)
        for obj in objects:
            self.store.add(obj)

    def get(self, namespace: str | None, name: str) -> Obj | None:
        return self.store.get(namespace, name)

    def by_index(self, index_name: str, value: str) -> list[Obj]:
        return self.store.by_index(index_name, value)


def index_listers(scene: Scene) -> dict[str, IndexedStore]:
    """Swaps the scene's listers for StoreListers over indexed stores of the same objects; the stores."""
    stores = {}
    for attr, lister in scene.memory.items():
        stores[attr] = IndexedStore(lister.objects())
        setattr(scene.listers, attr, StoreLister([cast(SharedInformer, stores[attr])]))
    return stores


# --- what the caches hold: objects as this controller made them, stamped as the informers keep them ---


def _as_the_secret_cache_keeps_it(secret: Obj) -> Obj:
    event = {"type": "ADDED", "object": secret}
    slim: Obj = SECRET_CACHE_PROJECTION.event(orjson.dumps(event))["object"]
    # The reflector stamps these on every object (list items lack them).
    return {"kind": secret["kind"], "apiVersion": secret["apiVersion"], **slim}


def _cached(obj: Obj, uid: str) -> Obj:
    obj["metadata"].setdefault("uid", uid)
    obj["metadata"].setdefault("resourceVersion", "5")
    return obj


def worker(job: Obj, index: int, phase: str = "Running", *, ready: bool = True, **status: Any) -> Obj:
    pod = compose.new_worker(job, index)
    conditions = [{"type": "Ready", "status": "True" if ready and phase == "Running" else "False"}]
    pod["status"] = {"phase": phase, "conditions": conditions, **status}
    return _cached(pod, f"worker-{index}")


def failed_worker(job: Obj, index: int, exit_code: int = 3) -> Obj:
    """Worker pod `index`, Failed: its container exited with `exit_code`."""
    return worker(
        job, index, "Failed", containerStatuses=[{"state": {"terminated": {"exitCode": exit_code}}}]
    )


def launcher(job: Obj, condition: str | None = None, *, suspended: bool = False, **status: Any) -> Obj:
    """The launcher Job; `condition` ("Complete", "Failed") finishes it."""
    made, _ = compose.new_launcher_job(job)
    made["spec"]["suspend"] = suspended
    made["status"] = dict(status)
    if condition is not None:
        made["status"]["conditions"] = [{"type": condition, "status": "True"}]
        if condition == "Complete":
            made["status"].setdefault("completionTime", EARLIER)
    return _cached(made, "launcher")


def launcher_pod(job: Obj, job_obj: Obj, phase: str = "Running") -> Obj:
    """A pod of the launcher Job (controlled by the Job, not by the MPIJob)."""
    name = f"{names.launcher_name(job)}-x1"
    pod: Obj = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "namespace": job["metadata"]["namespace"],
            "uid": "launcher-pod",
            "ownerReferences": [
                {
                    "apiVersion": "batch/v1",
                    "kind": "Job",
                    "name": job_obj["metadata"]["name"],
                    "uid": job_obj["metadata"]["uid"],
                    "controller": True,
                }
            ],
        },
        "status": {"phase": phase},
    }
    return pod


def labelled_launcher_pod(job: Obj, job_obj: Obj, phase: str = "Running") -> Obj:
    """A pod of the launcher Job with the labels the Job controller copies from its template (a restartable
    job's attempt label among them)."""
    pod = launcher_pod(job, job_obj, phase)
    pod["metadata"]["labels"] = dict(job_obj["spec"]["template"]["metadata"]["labels"])
    return pod


def foreign_service(name: str = "pi") -> Obj:
    """A headless Service in the job's namespace that no MPIJob controls, under the job's Service name."""
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": name, "namespace": "default", "uid": "theirs", "resourceVersion": "3"},
        "spec": {"clusterIP": "None", "selector": {"app": "theirs"}},
    }


def shared_children(job: Obj, running_workers: list[Obj] | None = None) -> list[Obj]:
    """The Service, ConfigMap (for these running workers) and SSH Secret, as the first sync made them."""
    return [
        _cached(service.new_service(job), "service"),
        _cached(configmap.new_config_map(job, running_workers or []), "config-map"),
        _cached(secret.new_ssh_secret(job), "secret"),
    ]


def condition(cond_type: str, status: str, reason: str, message: str, when: str) -> Obj:
    """A job condition as written out in a test's expectations: both of its times are `when`."""
    return {
        "type": cond_type,
        "status": status,
        "reason": reason,
        "message": message,
        "lastUpdateTime": when,
        "lastTransitionTime": when,
    }


def true_condition(cond_type: str, reason: str, message: str, when: str) -> Obj:
    return condition(cond_type, "True", reason, message, when)


def finished_status(condition: str, reason: str, *, workers: Obj | None = None) -> Obj:
    """The status of a job that finished an hour ago with `condition` (Succeeded or Failed)."""
    return {
        "conditions": [
            true_condition("Created", "MPIJobCreated", "MPIJob default/pi is created.", EARLIER),
            true_condition(condition, reason, "done", EARLIER),
        ],
        "startTime": EARLIER,
        "completionTime": EARLIER,
        "replicaStatuses": {"Launcher": {"succeeded": 1}, "Worker": workers if workers is not None else {}},
    }


CREATED = ("Normal", "MPIJobCreated", "MPIJob default/pi is created.")
# The first writes of every sync of a job without children, in upstream's order.
SHARED_CREATES = [
    ("create", "services", "pi"),
    ("create", "configmaps", "pi-config"),
    ("create", "secrets", "pi-ssh"),
]


def job(workers: int = 2, status: Obj | None = None, **run_policy: object) -> Obj:
    made = reference_job(workers)
    made["spec"]["runPolicy"].update(run_policy)
    if status is not None:
        made["status"] = status
    return made


def running_status(workers: int) -> Obj:
    """What a sync writes for a job whose launcher pod and `workers` workers all run."""
    return {
        "conditions": [
            true_condition("Created", "MPIJobCreated", "MPIJob default/pi is created.", NOW),
            true_condition("Running", "MPIJobRunning", "MPIJob default/pi is running.", NOW),
        ],
        "startTime": NOW,
        "replicaStatuses": {"Launcher": {"active": 1}, "Worker": {"active": workers}},
        "podCounts": {"Launcher": {"running": 1}, "Worker": {"running": workers, "ready": workers}},
        "aggregate": dict.fromkeys(AGGREGATE_KEYS, 0) | {"running": workers + 1},
        "tasks": [
            {
                "type": "Launcher",
                "restartCount": 0,
                "pods": [
                    {"name": "pi-launcher-x1", "uid": "launcher-pod", "phase": "Running", "restartCount": 0}
                ],
            },
            {
                "type": "Worker",
                "restartCount": 0,
                "pods": [
                    {"name": f"pi-worker-{i}", "uid": f"worker-{i}", "phase": "Running", "restartCount": 0}
                    for i in range(workers)
                ],
            },
        ],
        "phase": "Running",
    }


def running_job(workers: int = 2, annotations: Mapping[str, str] | None = None, **status: object) -> Obj:
    """A job of `workers` workers that a sync found running (running_status), with `status` laid over
    that status and, when given, `annotations` as its annotations."""
    made = job(workers, status={**running_status(workers), **status})
    if annotations is not None:
        made["metadata"]["annotations"] = dict(annotations)
    return made


def job_children(
    pi: Obj, *pods: Obj, the_launcher: Obj, launcher_phase: str = "Running", labelled: bool = False
) -> list[Obj]:
    """Every child of `pi` in place: shared children (the running pods in the hostfile), the given worker
    pods, `the_launcher` and its pod in `launcher_phase` (`labelled` as the Job controller labels it, see
    labelled_launcher_pod)."""
    running = [p for p in pods if p["status"]["phase"] == "Running"]
    pod = (labelled_launcher_pod if labelled else launcher_pod)(pi, the_launcher, launcher_phase)
    return [*shared_children(pi, running), *pods, the_launcher, pod]


def running_children(
    pi: Obj, *pods: Obj, launcher_condition: str | None = None, labelled: bool = False
) -> list[Obj]:
    """job_children with a launcher (with `launcher_condition`, if any) whose pod runs."""
    return job_children(pi, *pods, the_launcher=launcher(pi, launcher_condition), labelled=labelled)


def running_scene(
    pi: Obj,
    *pods: Obj,
    settings: SyncSettings | None = None,
    writer: RecordingWriter | None = None,
    launcher_condition: str | None = None,
    labelled: bool = False,
) -> Scene:
    """`pi` with every child in place (running_children)."""
    children = running_children(pi, *pods, launcher_condition=launcher_condition, labelled=labelled)
    return Scene(pi, *children, settings=settings, writer=writer)
