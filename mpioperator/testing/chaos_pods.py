"""Every pod of an attempt as it comes and goes, from a watch, for the check that two attempts of a job
never have pods at the same time (chaos_report.attempts_alive_together).

A watch sees each change in the order the API server made it, where polling would miss a pod that lived
between two polls. The API server is restarted and etcd compacted during a run: the watch then resumes
from the last resourceVersion seen, or, once that has expired, lists the pods again and records what
changed meanwhile (a pod gone as deleted, a new one as added); `relists` says how often, since what came
and went entirely within such a gap is not seen.
"""

from __future__ import annotations

import http.client
import threading
import urllib.parse
from dataclasses import dataclass
from typing import Any

from mpioperator.api.extensions import restarts
from mpioperator.testing.cluster import LocalCluster
from mpioperator.testing.rest import RestError

JOB_NAME_LABEL = "training.kubeflow.org/job-name"
ADDED, MODIFIED, DELETED = "ADDED", "MODIFIED", "DELETED"
WATCH_SECONDS = 15  # the server ends each watch after this long; the next resumes where it stopped


@dataclass(frozen=True, slots=True)
class PodEvent:
    kind: str  # ADDED, MODIFIED or DELETED
    job: str
    name: str
    uid: str
    attempt: int


def pod_event(kind: str, pod: dict[str, Any]) -> PodEvent:
    meta = pod["metadata"]
    return PodEvent(
        kind,
        str((meta.get("labels") or {}).get(JOB_NAME_LABEL, "")),
        str(meta["name"]),
        str(meta.get("uid", "")),
        restarts.attempt_of(pod),
    )


class PodHistory(threading.Thread):
    """Records the pods that carry an attempt label in one namespace until stopped."""

    def __init__(self, cluster: LocalCluster, namespace: str) -> None:
        super().__init__(name="chaos-pod-history", daemon=True)
        self._rest = cluster.rest
        selector = urllib.parse.quote(restarts.ATTEMPT_LABEL)
        self._path = f"/api/v1/namespaces/{namespace}/pods?labelSelector={selector}"
        self._halt = threading.Event()
        self._known: dict[str, PodEvent] = {}
        self.events: list[PodEvent] = []
        self.relists = 0
        self.errors: list[str] = []  # anything but the API server going away: a bug of this recorder

    def stop(self) -> None:
        self._halt.set()
        self.join(timeout=WATCH_SECONDS + 15)

    def run(self) -> None:
        version = ""
        while not self._halt.is_set():
            try:
                version = version or self._relist()
                version = self._watch(version)
            except RestError as exc:
                if exc.status == 410:
                    version = ""  # expired: list again
                elif exc.status < 500 and exc.status != 429:
                    self.errors.append(str(exc))
                    return
                self._halt.wait(0.5)
            except (OSError, http.client.HTTPException, ValueError):
                self._halt.wait(0.5)  # the API server restarting; resume from the same version
            except Exception as exc:  # kept for the test: a recorder bug must not pass silently
                self.errors.append(f"{type(exc).__name__}: {exc}")
                return

    def _relist(self) -> str:
        listed = self._rest.get(self._path)
        if self.events or self._known:
            self.relists += 1
        present = {item["metadata"]["uid"]: item for item in listed["items"]}
        for uid in [uid for uid in self._known if uid not in present]:
            self._record(DELETED, self._known[uid])
        for uid, item in present.items():
            self._record(MODIFIED if uid in self._known else ADDED, pod_event(ADDED, item))
        return str(listed["metadata"]["resourceVersion"])

    def _watch(self, version: str) -> str:
        """Records the watch's events until the server ends it; the version to resume from ("" to list)."""
        path = f"{self._path}&watch=1&allowWatchBookmarks=true&resourceVersion={version}"
        for event in self._rest.watch(f"{path}&timeoutSeconds={WATCH_SECONDS}", timeout=WATCH_SECONDS + 15):
            kind, obj = event.get("type"), event.get("object") or {}
            if kind == "ERROR":
                return "" if obj.get("code") == 410 else version
            version = str(obj["metadata"]["resourceVersion"])
            if kind in (ADDED, MODIFIED, DELETED):
                self._record(kind, pod_event(kind, obj))
            if self._halt.is_set():
                break
        return version

    def _record(self, kind: str, event: PodEvent) -> None:
        event = PodEvent(kind, event.job, event.name, event.uid, event.attempt)
        if kind == DELETED:
            self._known.pop(event.uid, None)
        else:
            self._known[event.uid] = event
        self.events.append(event)
