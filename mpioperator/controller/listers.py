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


JOB_ROLE_INDEX = "mpijob-role"
# The labels every pod the operator makes has: a selection by exactly these is one bucket of JOB_ROLE_INDEX.
_ROLE_SELECTOR = frozenset((api.LABEL_OPERATOR_NAME, api.LABEL_JOB_NAME, api.LABEL_JOB_ROLE))


def job_role_index(obj: Obj) -> list[str]:
    """`<ns>/<job>/<role>/<operator>` from the three labels the operator gives its pods (label values and
    namespaces have no "/"): a job's workers are one bucket, found and versioned apart from its launcher."""
    meta = obj.get("metadata") or {}
    labels = meta.get("labels") or {}
    values = [labels.get(key) for key in (api.LABEL_JOB_NAME, api.LABEL_JOB_ROLE, api.LABEL_OPERATOR_NAME)]
    return [_role_key(meta.get("namespace", ""), labels)] if all(values) else []


def _role_key(namespace: str, labels: Mapping[str, str]) -> str:
    job, role = labels[api.LABEL_JOB_NAME], labels[api.LABEL_JOB_ROLE]
    return f"{namespace}/{job}/{role}/{labels[api.LABEL_OPERATOR_NAME]}"


# How the pod cache is indexed, by the operator's informers and the in-memory tests alike.
POD_INDEXERS = {JOB_NAME_INDEX: job_name_index, JOB_ROLE_INDEX: job_role_index}


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
        by_role = labels.keys() == _ROLE_SELECTOR and all(labels.values())
        found: list[Obj] = []
        for informer in self._informers:
            if informer.namespace not in (None, namespace):
                continue
            if by_role and JOB_ROLE_INDEX in informer.store.index_names():
                # Every pod of the bucket has exactly these labels: none is left to match.
                found.extend(informer.by_index(JOB_ROLE_INDEX, _role_key(namespace, labels)))
            elif job is not None and JOB_NAME_INDEX in informer.store.index_names():
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
        by_role = labels.keys() == _ROLE_SELECTOR and all(labels.values())
        versions: list[tuple[int, int]] = []
        for informer in self._informers:
            if informer.namespace not in (None, namespace):
                continue
            store = informer.store
            if by_role and JOB_ROLE_INDEX in store.index_names():
                # The bucket's own version: a launcher pod's change does not change the workers' selection.
                versions.append(
                    (id(store), store.index_version(JOB_ROLE_INDEX, _role_key(namespace, labels)))
                )
            elif JOB_NAME_INDEX in store.index_names():
                versions.append((id(store), store.index_version(JOB_NAME_INDEX, f"{namespace}/{job}")))
            else:
                return None
        return tuple(versions)

    def owned_by(self, uid: str) -> list[Obj]:
        if not uid:
            return []
        found: list[Obj] = []
        for informer in self._informers:
            found.extend(informer.by_index(CONTROLLER_OWNER_INDEX, uid))
        return found
