"""The PodsStuck condition changes only when the stuck pods or the kind of problem change."""

from __future__ import annotations

import datetime as dt
from typing import Any

from mpioperator.controller.health import COND_PODS_STUCK, MAX_LISTED, apply, assess
from mpioperator.controller.problems import stuck_pods
from test.unit.controller.pods import NOW, job_pod, waiting

Obj = dict[str, Any]
LATER = NOW + dt.timedelta(seconds=30)


def _pulling(*reasons: str) -> list[Obj]:
    return [
        job_pod(f"j-worker-{i}", "Pending", index=i, containers=[waiting(reason, f"{reason} {i}")])
        for i, reason in enumerate(reasons)
    ]


def _after(status: Obj, pods: list[Obj], now: dt.datetime) -> tuple[Obj, bool]:
    health = assess(status, stuck_pods([], pods, now)[0], now)
    apply(status, health)
    return status, health.changed


def test_a_new_problem_sets_the_condition_and_lists_the_pod() -> None:
    status, changed = _after(
        {"conditions": [{"type": "Created", "status": "True"}]}, _pulling("ErrImagePull"), NOW
    )
    assert changed
    assert [c["type"] for c in status["conditions"]] == ["Created", COND_PODS_STUCK]
    stuck = status["conditions"][-1]
    assert (stuck["status"], stuck["reason"]) == ("True", "ErrImagePull")
    assert stuck["message"] == "ErrImagePull: worker j-worker-0: ErrImagePull 0"
    assert status["unhealthyPods"] == [
        {"name": "j-worker-0", "replicaType": "Worker", "reason": "ErrImagePull", "restarts": 0}
    ]


def test_the_image_pull_back_off_is_the_same_problem_and_changes_nothing() -> None:
    status, _ = _after({}, _pulling("ErrImagePull"), NOW)
    before = [dict(c) for c in status["conditions"]], list(status["unhealthyPods"])

    status, changed = _after(status, _pulling("ImagePullBackOff"), LATER)

    assert not changed
    assert (status["conditions"], status["unhealthyPods"]) == before


def test_another_pod_stuck_is_news_and_keeps_the_transition_time() -> None:
    status, _ = _after({}, _pulling("ErrImagePull"), NOW)
    status, changed = _after(status, _pulling("ErrImagePull", "ErrImagePull"), LATER)
    assert changed
    stuck = status["conditions"][-1]
    assert "j-worker-1" in stuck["message"]
    assert stuck["lastTransitionTime"] == "2026-03-04T05:06:07Z"
    assert stuck["lastUpdateTime"] == "2026-03-04T05:06:37Z"


def test_a_different_problem_is_news() -> None:
    status, _ = _after({}, _pulling("ErrImagePull"), NOW)
    status, changed = _after(status, _pulling("CrashLoopBackOff"), LATER)
    assert changed and status["conditions"][-1]["reason"] == "CrashLoopBackOff"


def test_a_growing_restart_count_updates_the_list_but_not_the_condition() -> None:
    crash = [job_pod("j-worker-0", containers=[waiting("CrashLoopBackOff", "back-off 10s", restarts=1)])]
    status, _ = _after({}, crash, NOW)
    condition = dict(status["conditions"][-1])
    crash = [job_pod("j-worker-0", containers=[waiting("CrashLoopBackOff", "back-off 20s", restarts=2)])]

    status, changed = _after(status, crash, LATER)

    assert not changed and status["conditions"][-1] == condition
    assert status["unhealthyPods"][0]["restarts"] == 2


def test_when_nothing_is_stuck_the_condition_and_list_go() -> None:
    status, _ = _after({"conditions": [{"type": "Created", "status": "True"}]}, _pulling("ErrImagePull"), NOW)
    status, changed = _after(status, [job_pod("j-worker-0")], LATER)
    assert not changed
    assert [c["type"] for c in status["conditions"]] == ["Created"]
    assert "unhealthyPods" not in status


def test_the_list_is_bounded() -> None:
    status, _ = _after({}, _pulling(*["CrashLoopBackOff"] * (MAX_LISTED + 5)), NOW)
    assert [p["name"] for p in status["unhealthyPods"]] == [f"j-worker-{i}" for i in range(MAX_LISTED)]
    assert "and 12 more" in status["conditions"][-1]["message"]


def test_a_healthy_job_gets_no_condition_and_no_list() -> None:
    status, changed = _after({"conditions": []}, [job_pod("j-worker-0")], NOW)
    assert not changed and status == {"conditions": []}
