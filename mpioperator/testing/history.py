"""Every version of a collection's objects, in the order the API server wrote them, read by a watch.

Polling misses objects that live between two polls (a pod deleted by a preemption a moment after it was
made); a watch from the list's resourceVersion sees each write once, so a test can count what was ever
created and say what came before what within one collection.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Any

from mpioperator.testing.rest import RestClient

# Short server-side watches, so stop() is never kept waiting long; each resumes where the last ended.
_WATCH_SECONDS = 5


@dataclass(frozen=True)
class Event:
    type: str  # ADDED, MODIFIED, DELETED
    object: dict[str, Any]

    @property
    def name(self) -> str:
        return str(self.object["metadata"]["name"])

    @property
    def uid(self) -> str:
        return str(self.object["metadata"]["uid"])

    def label(self, key: str) -> str | None:
        value = (self.object["metadata"].get("labels") or {}).get(key)
        return None if value is None else str(value)


class History:
    """Records the events of `path` (a collection, e.g. /api/v1/namespaces/NS/pods) from now until stop()."""

    def __init__(self, rest: RestClient, path: str) -> None:
        self._rest = rest
        self._path = path
        self._events: list[Event] = []
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self.error: BaseException | None = None
        listed = rest.get(path)
        self._version = str(listed["metadata"]["resourceVersion"])
        for item in listed.get("items") or ():
            self._events.append(Event("ADDED", item))
        self._thread = threading.Thread(target=self._run, name=f"history {path}", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        try:
            while not self._stopping.is_set():
                query = f"?watch=1&resourceVersion={self._version}&timeoutSeconds={_WATCH_SECONDS}"
                for raw in self._rest.watch(self._path + query, timeout=_WATCH_SECONDS + 30):
                    if raw["type"] == "ERROR":
                        raise RuntimeError(f"watch of {self._path} failed: {raw['object']}")
                    event = Event(raw["type"], raw["object"])
                    with self._lock:
                        self._events.append(event)
                    self._version = str(event.object["metadata"]["resourceVersion"])
        except BaseException as err:  # handed to the test by events()
            self.error = err

    def stop(self) -> list[Event]:
        self._stopping.set()
        self._thread.join(timeout=_WATCH_SECONDS + 35)
        return self.events()

    def events(self) -> list[Event]:
        if self.error is not None:
            raise AssertionError(f"the watch of {self._path} broke: {self.error}") from self.error
        with self._lock:
            return list(self._events)

    def created(self) -> dict[str, Event]:
        """The first version of every object seen, by UID, in creation order."""
        first: dict[str, Event] = {}
        for event in self.events():
            first.setdefault(event.uid, event)
        return first
