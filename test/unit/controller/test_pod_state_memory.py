"""A job's next sync starts from its last sync's pod descriptions: the very same pod objects are not
described again, a pod the cache replaced is, and pods no sync reads any more are let go."""

from __future__ import annotations

import copy
from collections import Counter

import pytest

from mpioperator.api.objects import Obj
from mpioperator.controller import pod_state
from mpioperator.controller.pod_state import PodStateMemory, PodStates


def pod(name: str, phase: str = "Running", restarts: int = 0) -> Obj:
    return {
        "metadata": {"name": name},
        "status": {"phase": phase, "containerStatuses": [{"name": "c", "restartCount": restarts}]},
    }


@pytest.fixture
def described(monkeypatch: pytest.MonkeyPatch) -> Counter[str]:
    calls: Counter[str] = Counter()
    real = pod_state.describe

    def counted(p: Obj) -> pod_state.PodState:
        calls[p["metadata"]["name"]] += 1
        return real(p)

    monkeypatch.setattr(pod_state, "describe", counted)
    return calls


def test_the_next_sync_describes_only_the_pod_the_cache_replaced(described: Counter[str]) -> None:
    memory = PodStateMemory()
    pods = [pod(f"w-{i}") for i in range(100)]
    first = memory.begin("job")
    assert all(first.of(p).running for p in pods)
    memory.keep("job", first)
    described.clear()

    changed = copy.deepcopy(pods[7])
    changed["status"]["containerStatuses"][0]["restartCount"] = 3
    pods[7] = changed
    second = memory.begin("job")
    states = [second.of(p) for p in pods]

    assert described == Counter({"w-7": 1})
    assert states[7].restarts == 3
    assert sum(s.restarts for s in states) == 3


def synced(memory: PodStateMemory, uid: str, pods: list[Obj]) -> None:
    """A sync of job `uid` that reads `pods`."""
    states = memory.begin(uid)
    for p in pods:
        states.of(p)
    memory.keep(uid, states)


def test_pods_no_sync_reads_any_more_are_let_go() -> None:
    memory = PodStateMemory()
    pods = [pod(f"w-{i}") for i in range(10)]
    synced(memory, "job", pods)
    assert memory.pods_held() == 10

    synced(memory, "job", pods[:4])  # scaled down to four workers
    assert memory.pods_held() == 4


def test_a_sync_that_asked_about_no_pod_leaves_the_last_descriptions(described: Counter[str]) -> None:
    memory = PodStateMemory()
    pods = [pod(f"w-{i}") for i in range(10)]
    synced(memory, "job", pods)
    synced(memory, "job", [])  # nothing changed: the report kept its walks
    assert memory.pods_held() == 10
    described.clear()

    third = memory.begin("job")
    for p in pods:
        third.of(p)
    assert described == Counter()


def test_facts_are_derived_once_per_pod_object_across_syncs() -> None:
    memory = PodStateMemory()
    pods = [pod(f"w-{i}") for i in range(5)]
    derived: Counter[str] = Counter()

    def name_length(p: Obj) -> int:
        derived[p["metadata"]["name"]] += 1
        return len(p["metadata"]["name"])

    for _ in range(3):
        states = memory.begin("job")
        assert [states.fact(p, "name length", name_length) for p in pods] == [3] * 5
        assert states.fact(pods[0], "other fact", lambda p: "other") == "other"
        memory.keep("job", states)
    assert derived == Counter({f"w-{i}": 1 for i in range(5)})


def test_the_least_recently_synced_jobs_are_forgotten_past_the_capacity() -> None:
    memory = PodStateMemory(capacity=10)
    for job in ("a", "b", "c"):
        synced(memory, job, [pod(f"{job}-{i}") for i in range(4)])
    assert memory.pods_held() == 8
    assert not memory.holds("a")
    assert memory.holds("b") and memory.holds("c")


def test_a_forgotten_job_starts_from_nothing(described: Counter[str]) -> None:
    memory = PodStateMemory()
    p = pod("w-0")
    synced(memory, "job", [p])
    memory.forget("job")
    assert memory.pods_held() == 0
    described.clear()

    memory.begin("job").of(p)
    assert described == Counter({"w-0": 1})


def test_a_job_without_a_uid_is_never_kept(described: Counter[str]) -> None:
    memory = PodStateMemory()
    p = pod("w-0")
    synced(memory, "", [p])
    described.clear()
    memory.begin("").of(p)
    assert described == Counter({"w-0": 1})
    assert not memory.holds("")


def test_an_empty_descriptions_object_is_still_the_one_given() -> None:
    # Callers pass `states or PodStates()`: the sync's own must not read as none given while empty.
    assert PodStates()
    assert PodStates(PodStates())
