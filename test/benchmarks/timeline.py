"""When things happened, as a client sees them: watch streams noting the first sight of each object.

One thread per kind watches a namespace from the resourceVersion of an initial list, so nothing created
after `start()` is missed, and notes the monotonic time each MPIJob's child first appears and each MPIJob
first reports Running and Succeeded. Watches cost the API server far less than polling would, and both
operators are measured through the same streams.
"""

from __future__ import annotations

import functools
import threading
import time
from collections import defaultdict
from collections.abc import Callable
from typing import Any

from mpioperator.testing.rest import RestClient

# (path of the namespaced collection, short kind); every child is attributed to its MPIJob by ownerReference.
CHILD_KINDS = {
    "services": "/api/v1/namespaces/{ns}/services",
    "configmaps": "/api/v1/namespaces/{ns}/configmaps",
    "secrets": "/api/v1/namespaces/{ns}/secrets",
    "pods": "/api/v1/namespaces/{ns}/pods",
    "jobs": "/apis/batch/v1/namespaces/{ns}/jobs",
}
MPIJOBS = "/apis/kubeflow.org/v2beta1/namespaces/{ns}/mpijobs"


def mpijob_owner(obj: dict[str, Any]) -> str | None:
    for ref in obj.get("metadata", {}).get("ownerReferences") or ():
        if ref.get("kind") == "MPIJob" and ref.get("controller"):
            return str(ref["name"])
    return None


def condition_true(job: dict[str, Any], kind: str) -> bool:
    return any(
        c.get("type") == kind and c.get("status") == "True"
        for c in (job.get("status") or {}).get("conditions") or ()
    )


class Timeline:
    """First sightings in one namespace; all times are time.monotonic()."""

    def __init__(self, rest: RestClient, namespace: str, *, kinds: tuple[str, ...] = tuple(CHILD_KINDS)):
        self.rest = rest
        self.namespace = namespace
        self.kinds = kinds
        self._lock = threading.Lock()
        self._children: dict[str, set[tuple[str, str]]] = defaultdict(set)
        self.child_complete_at: dict[str, float] = {}
        self.launcher_at: dict[str, float] = {}
        self.running_at: dict[str, float] = {}
        self.succeeded_at: dict[str, float] = {}
        self.watch_errors: list[str] = []
        self.expected_children = 0
        # Worker pods seen Running per MPIJob, and when the last of `expected_running` got there.
        self._running_pods: dict[str, set[str]] = defaultdict(set)
        self.pods_running_at: dict[str, float] = {}
        self.expected_running = 0
        self._stopping = threading.Event()

    def start(self, expected_children: int, expected_running: int = 0) -> Timeline:
        """`expected_children`: Service, ConfigMap, Secret, workers and launcher Job of one MPIJob;
        `expected_running`: its workers, to note when all are Running (0: not noted)."""
        self.expected_children = expected_children
        self.expected_running = expected_running
        for kind in self.kinds:
            self._spawn(CHILD_KINDS[kind], functools.partial(self._on_child, kind))
        self._spawn(MPIJOBS, self._on_mpijob)
        return self

    def stop(self) -> None:
        self._stopping.set()

    def _spawn(self, template: str, handle: Callable[[dict[str, Any], float], None]) -> None:
        path = template.format(ns=self.namespace)
        listed = self.rest.get(path + "?limit=1")
        version = str(listed["metadata"]["resourceVersion"])
        thread = threading.Thread(
            target=self._follow, args=(path, version, handle), daemon=True, name=f"watch {path}"
        )
        thread.start()

    def _follow(self, path: str, version: str, handle: Callable[[dict[str, Any], float], None]) -> None:
        while not self._stopping.is_set():
            query = f"?watch=1&resourceVersion={version}&timeoutSeconds=1800&allowWatchBookmarks=true"
            try:
                for event in self.rest.watch(path + query, timeout=600):
                    obj = event.get("object") or {}
                    version = obj.get("metadata", {}).get("resourceVersion", version)
                    if event.get("type") in ("ADDED", "MODIFIED"):
                        handle(obj, time.monotonic())
                    elif event.get("type") == "ERROR":
                        raise RuntimeError(obj.get("message", "watch error"))
            except Exception as exc:  # a dropped stream resumes from the last version seen
                if self._stopping.is_set():
                    return
                self.watch_errors.append(f"{path}: {exc}")
                time.sleep(0.2)

    def _on_child(self, kind: str, obj: dict[str, Any], now: float) -> None:
        owner = mpijob_owner(obj)
        if owner is None:
            return
        with self._lock:
            seen = self._children[owner]
            seen.add((kind, obj["metadata"]["name"]))
            if kind == "jobs":
                self.launcher_at.setdefault(owner, now)
            if len(seen) >= self.expected_children:
                self.child_complete_at.setdefault(owner, now)
            if (
                kind == "pods"
                and self.expected_running
                and (obj.get("status") or {}).get("phase") == "Running"
            ):
                running = self._running_pods[owner]
                running.add(obj["metadata"]["name"])
                if len(running) >= self.expected_running:
                    self.pods_running_at.setdefault(owner, now)

    def _on_mpijob(self, job: dict[str, Any], now: float) -> None:
        name = job["metadata"]["name"]
        with self._lock:
            if condition_true(job, "Running"):
                self.running_at.setdefault(name, now)
            if condition_true(job, "Succeeded"):
                self.succeeded_at.setdefault(name, now)
                # A job can pass through Running between two watch events; it was running by then.
                self.running_at.setdefault(name, now)

    def progress(self, owner: str) -> tuple[int, int]:
        """Children seen and workers seen Running so far for one MPIJob."""
        with self._lock:
            return len(self._children.get(owner, ())), len(self._running_pods.get(owner, ()))

    def count(self, which: dict[str, float]) -> int:
        with self._lock:
            return len(which)
