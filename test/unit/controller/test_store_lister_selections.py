"""The pod cache's selections as the sync asks them: a job's workers by the operator's three labels come
from one index bucket, with no label matched per pod, and their version moves with the workers only."""

from __future__ import annotations

from collections import Counter
from typing import Any, cast

import pytest

from mpioperator.api import constants as api
from mpioperator.api.objects import Obj
from mpioperator.cache.informer import SharedInformer
from mpioperator.controller import listers
from mpioperator.controller.listers import StoreLister
from mpioperator.controller.worker_view import worker_selector
from test.unit.controller.sync_fixtures import IndexedStore


def pod(name: str, job: str, role: str, *, namespace: str = "ns", operator: bool = True) -> Obj:
    labels = {api.LABEL_JOB_NAME: job, api.LABEL_JOB_ROLE: role}
    if operator:
        labels[api.LABEL_OPERATOR_NAME] = api.OPERATOR_NAME
    return {"metadata": {"name": name, "namespace": namespace, "labels": labels, "resourceVersion": "1"}}


def cache(*pods: Obj) -> tuple[StoreLister, IndexedStore]:
    store = IndexedStore(list(pods))
    return StoreLister([cast(SharedInformer, store)]), store


def job(name: str) -> Obj:
    return {"metadata": {"name": name, "namespace": "ns"}}


@pytest.fixture
def matched(monkeypatch: pytest.MonkeyPatch) -> Counter[str]:
    calls: Counter[str] = Counter()
    real = listers.matches

    def counted(obj: Obj, labels: Any) -> bool:
        calls["matches"] += 1
        return real(obj, labels)

    monkeypatch.setattr(listers, "matches", counted)
    return calls


def test_a_jobs_workers_are_selected_without_matching_a_label(matched: Counter[str]) -> None:
    lister, _ = cache(
        pod("pi-worker-0", "pi", api.ROLE_WORKER),
        pod("pi-worker-1", "pi", api.ROLE_WORKER),
        pod("pi-launcher-x", "pi", api.ROLE_LAUNCHER),
        pod("other-worker-0", "other", api.ROLE_WORKER),
        pod("pi-worker-0", "pi", api.ROLE_WORKER, namespace="elsewhere"),
        pod("pi-worker-9", "pi", api.ROLE_WORKER, operator=False),  # not labelled as the operator's
    )
    found = lister.select("ns", worker_selector(job("pi")))
    assert sorted(p["metadata"]["name"] for p in found) == ["pi-worker-0", "pi-worker-1"]
    assert matched["matches"] == 0


def test_a_selection_by_other_labels_still_matches_each(matched: Counter[str]) -> None:
    lister, _ = cache(
        pod("pi-worker-0", "pi", api.ROLE_WORKER), pod("pi-launcher-x", "pi", api.ROLE_LAUNCHER)
    )
    found = lister.select("ns", {api.LABEL_JOB_NAME: "pi", api.LABEL_JOB_ROLE: api.ROLE_LAUNCHER})
    assert [p["metadata"]["name"] for p in found] == ["pi-launcher-x"]
    assert matched["matches"] == 2


def test_the_workers_version_moves_with_a_worker_and_not_with_the_launcher() -> None:
    launcher = pod("pi-launcher-x", "pi", api.ROLE_LAUNCHER)
    worker = pod("pi-worker-0", "pi", api.ROLE_WORKER)
    lister, store = cache(worker, launcher)
    selector = worker_selector(job("pi"))
    first = lister.select_version("ns", selector)

    store.store.update({**launcher, "status": {"phase": "Running"}})
    assert lister.select_version("ns", selector) == first

    store.store.update({**worker, "status": {"phase": "Running"}})
    assert lister.select_version("ns", selector) != first


def test_a_pod_whose_role_label_changes_leaves_the_workers_selection() -> None:
    worker = pod("pi-worker-0", "pi", api.ROLE_WORKER)
    lister, store = cache(worker)
    selector = worker_selector(job("pi"))
    first = lister.select_version("ns", selector)

    relabelled = pod("pi-worker-0", "pi", "something-else")
    store.store.update(relabelled)

    assert lister.select_version("ns", selector) != first
    assert lister.select("ns", selector) == []
