"""T9k's status on a real API server, the controller running: the phases a T9k user reads (Suspended for
its Paused, Resuming, Unknown), `aggregate` and `tasks`, for a paused, a resuming, a debugging and a failed
job, and the bound on `tasks` for a job of many pods. Each test prints what `kubectl get` and `kubectl
describe` show (`pytest -s`)."""

from __future__ import annotations

from typing import Any

from mpioperator.controller.tasks import MAX_TASK_PODS
from mpioperator.testing.mpijobs import mpijob
from test.integration.controller.actors import Actors
from test.integration.controller.conftest import Harness

NONE = dict.fromkeys(("creating", "pending", "running", "succeeded", "failed", "unknown", "deleted"), 0)


def _aggregate(**counts: int) -> dict[str, int]:
    return {**NONE, **counts}


def _shown(a: Actors, job: str) -> str:
    """`kubectl get -o wide` and `kubectl describe` of the job, printed for the record and returned."""
    get = a.cluster.kubectl("-n", a.ns, "get", "mpijob", job, "-o", "wide").stdout
    describe = a.cluster.kubectl("-n", a.ns, "describe", "mpijob", job).stdout
    text = f"$ kubectl get mpijob {job} -o wide\n{get}\n$ kubectl describe mpijob {job}\n{describe}"
    print(text)
    return text


def _column(a: Actors, job: str, name: str) -> str:
    out = a.cluster.kubectl("-n", a.ns, "get", "mpijob", job, "-o", "wide").stdout.splitlines()
    header, row = out[0].split(), out[1].split()
    return row[header.index(name)]


def _true(a: Actors, job: str, cond_type: str) -> bool:
    return (a.condition(job, cond_type) or {}).get("status") == "True"


def _pods(task: dict[str, Any]) -> list[tuple[str, str]]:
    return [(p["name"], p["phase"]) for p in task["pods"]]


async def test_a_paused_job_is_suspended_with_no_pods_and_nothing_creating(harness: Harness) -> None:
    a = Actors(harness.cluster, harness.namespace)
    a.submit(mpijob("paused", workers=2, run_policy={"suspend": True}))
    await a.until_true(lambda: a.status("paused").get("phase") == "Suspended", "phase Suspended")

    status = a.status("paused")
    assert _true(a, "paused", "Suspended"), "T9k's Paused condition is upstream's Suspended"
    assert status["aggregate"] == NONE
    assert [(t["type"], t["pods"]) for t in status["tasks"]] == [("Launcher", []), ("Worker", [])]
    shown = _shown(a, "paused")
    assert _column(a, "paused", "PHASE") == "Suspended"
    assert "Suspended" in shown and "Aggregate:" in shown


async def test_a_resumed_job_is_resuming_until_its_pods_run(harness: Harness) -> None:
    a = Actors(harness.cluster, harness.namespace)
    a.submit(mpijob("resuming", workers=2, run_policy={"suspend": True}))
    await a.until_true(lambda: a.status("resuming").get("phase") == "Suspended", "phase Suspended")
    a.patch_spec("resuming", {"spec": {"runPolicy": {"suspend": False}}})

    await a.until_true(lambda: len(a.worker_pods("resuming")) == 2, "workers made again")
    await a.until_true(
        lambda: a.status("resuming").get("aggregate") == _aggregate(pending=2, creating=1),
        "two workers pending and the launcher to come",
    )
    status = a.status("resuming")
    assert status["phase"] == "Resuming"
    assert (a.condition("resuming", "Suspended") or {}).get("reason") == "MPIJobResumed"
    assert _pods(status["tasks"][1]) == [("resuming-worker-0", "Pending"), ("resuming-worker-1", "Pending")]
    assert all(p["uid"] for p in status["tasks"][1]["pods"])
    _shown(a, "resuming")
    assert _column(a, "resuming", "PHASE") == "Resuming"

    a.set_workers("resuming", "Running", ready=True)
    await a.until(lambda: a.launcher_job("resuming"), "launcher Job")
    await a.until_true(
        lambda: not (a.launcher_job("resuming") or {}).get("spec", {}).get("suspend"), "launcher resumed"
    )
    a.create_launcher_pod("resuming")
    await a.until_true(lambda: a.status("resuming").get("phase") == "Running", "phase Running")
    assert a.status("resuming")["aggregate"] == _aggregate(running=3)


async def test_a_debugging_job_runs_with_its_debug_condition_and_lists_its_pods(harness: Harness) -> None:
    a = Actors(harness.cluster, harness.namespace)
    body = mpijob("debugging", workers=2, annotations={"mpioperator.io/debug-mode": "true"})
    a.submit(body)
    await a.launched("debugging")

    await a.until_true(lambda: a.status("debugging").get("phase") == "Running", "phase Running")
    await a.until_true(
        lambda: a.status("debugging").get("aggregate") == _aggregate(running=3), "three pods running"
    )
    status = a.status("debugging")
    assert _true(a, "debugging", "DebugMode")
    assert [(t["type"], _pods(t)) for t in status["tasks"]] == [
        ("Launcher", [("debugging-launcher-abcde", "Running")]),
        ("Worker", [("debugging-worker-0", "Running"), ("debugging-worker-1", "Running")]),
    ]
    shown = _shown(a, "debugging")
    assert "DebugMode" in shown and _column(a, "debugging", "RUNNING") == "3"


async def test_a_failed_job_is_failed_with_its_failed_pods_counted_and_listed(harness: Harness) -> None:
    a = Actors(harness.cluster, harness.namespace)
    a.submit(mpijob("failed", workers=2, run_policy={"cleanPodPolicy": "None"}))
    launcher_pod = await a.launched("failed")
    await a.until_true(lambda: a.status("failed").get("phase") == "Running", "phase Running")

    a.set_pod(launcher_pod, "Failed", reason="Error")
    a.set_launcher_job("failed", "Failed", reason="BackoffLimitExceeded", message="Job has reached the limit")
    await a.until_true(lambda: a.status("failed").get("phase") == "Failed", "phase Failed")

    status = a.status("failed")
    assert _true(a, "failed", "Failed"), "T9k's Completed is Succeeded or Failed being True"
    assert status["aggregate"] == _aggregate(failed=1, running=2)
    assert _pods(status["tasks"][0]) == [("failed-launcher-abcde", "Failed")]
    _shown(a, "failed")
    assert _column(a, "failed", "FAILED") == "1"


async def test_a_pod_whose_state_is_unknown_makes_the_job_unknown_until_it_is_known(harness: Harness) -> None:
    a = Actors(harness.cluster, harness.namespace)
    a.submit(mpijob("lost", workers=2))
    await a.launched("lost")
    await a.until_true(lambda: a.status("lost").get("phase") == "Running", "phase Running")

    a.set_pod("lost-worker-1", "Unknown")
    await a.until_true(lambda: a.status("lost").get("phase") == "Unknown", "phase Unknown")
    assert a.status("lost")["aggregate"] == _aggregate(running=2, unknown=1)
    a.set_pod("lost-worker-1", "Running", ready=True)
    await a.until_true(lambda: a.status("lost").get("phase") == "Running", "phase Running again")


async def test_tasks_list_the_first_pods_of_a_large_job_and_count_the_rest(harness: Harness) -> None:
    a = Actors(harness.cluster, harness.namespace)
    workers = MAX_TASK_PODS + 8
    await a.submitted_with_workers(mpijob("large", workers=workers), timeout=120)
    await a.until_true(
        lambda: a.status("large").get("aggregate", {}).get("pending") == workers, "every worker counted"
    )

    worker_task = a.status("large")["tasks"][1]
    assert [p["name"] for p in worker_task["pods"]] == [f"large-worker-{i}" for i in range(MAX_TASK_PODS)]
    assert worker_task["truncated"] == 8
