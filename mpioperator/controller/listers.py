"""Read-only views over informer stores, in the shape the sync handler asks questions."""

from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence

from mpioperator.api import constants as api
from mpioperator.api.objects import Obj
from mpioperator.cache.informer import SharedInformer
from mpioperator.cache.store import CONTROLLER_OWNER_INDEX, NAMESPACE_INDEX

JOB_NAME_INDEX = "mpijob-name"


def job_name_index(obj: Obj) -> list[str]:
    """`<ns>/<job>` from the job-name label, so a job's pods are found without scanning its namespace."""
    meta = obj.get("metadata") or {}
    job = (meta.get("labels") or {}).get(api.LABEL_JOB_NAME)
    return [f"{meta.get('namespace', '')}/{job}"] if job else []


def matches(obj: Obj, labels: Mapping[str, str]) -> bool:
    have = (obj.get("metadata") or {}).get("labels") or {}
    return all(have.get(k) == v for k, v in labels.items())


class StoreLister:
    """One resource across the informers of every watched namespace."""

    def __init__(self, informers: Sequence[SharedInformer]) -> None:
        self._informers = list(informers)

    def get(self, namespace: str, name: str) -> Obj | None:
        for informer in self._informers:
            if informer.namespace in (None, namespace):
                found = informer.get(namespace, name)
                if found is not None:
                    return found
        return None

    def select(self, namespace: str, labels: Mapping[str, str]) -> list[Obj]:
        job = labels.get(api.LABEL_JOB_NAME)
        found: list[Obj] = []
        for informer in self._informers:
            if informer.namespace not in (None, namespace):
                continue
            if job is not None and JOB_NAME_INDEX in informer.store.index_names():
                # Indexed by `<namespace>/<job-name label>`: a namespace has no "/", so every pod the
                # index gives has the job's label; the others are left to look at, a big job's pods each.
                candidates = informer.by_index(JOB_NAME_INDEX, f"{namespace}/{job}")
                rest = {k: v for k, v in labels.items() if k != api.LABEL_JOB_NAME}
                found.extend(obj for obj in candidates if matches(obj, rest))
            else:
                candidates = informer.by_index(NAMESPACE_INDEX, namespace)
                found.extend(obj for obj in candidates if matches(obj, labels))
        return found

    def select_version(self, namespace: str, labels: Mapping[str, str]) -> Hashable | None:
        """What changes whenever `select(namespace, labels)` may answer differently, for a selection by
        job name from informers indexed by it; None when it cannot tell (then nothing may be memoized)."""
        job = labels.get(api.LABEL_JOB_NAME)
        if job is None:
            return None
        versions: list[tuple[int, int]] = []
        for informer in self._informers:
            if informer.namespace not in (None, namespace):
                continue
            if JOB_NAME_INDEX not in informer.store.index_names():
                return None
            store = informer.store
            versions.append((id(store), store.index_version(JOB_NAME_INDEX, f"{namespace}/{job}")))
        return tuple(versions)

    def owned_by(self, uid: str) -> list[Obj]:
        if not uid:
            return []
        found: list[Obj] = []
        for informer in self._informers:
            found.extend(informer.by_index(CONTROLLER_OWNER_INDEX, uid))
        return found
