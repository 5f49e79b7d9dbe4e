"""Why a job's pods do not start, and why it failed, said on the MPIJob itself (issue 17, parts 2 and 3).

The test writes pod statuses as kube-scheduler and a kubelet would; the controller runs in-process against
a real API server.
"""

from __future__ import annotations

from typing import Any

import pytest

from mpioperator.kube.resources import PODS
from mpioperator.testing.mpijobs import mpijob
from test.integration.controller.actors import Actors
from test.integration.controller.conftest import Harness
from test.integration.controller.kubelet import container, pod_status, unschedulable, write_pod_status
from test.integration.controller.waits import condition_appears

Obj = dict[str, Any]
SCHEDULER_SAYS = (
    "0/3 nodes are available: 3 Insufficient cpu. preemption: 0/3 nodes are available: "
    "3 No preemption victims found for incoming pod."
)
NOT_FOUND = 'failed to pull and unpack image "docker.io/mpioperator/no-such-image:1": not found'


def _actors(h: Harness) -> Actors:
    return Actors(h.cluster, h.namespace)


async def _seen_and_synced(h: Harness, a: Actors, pod: str) -> None:
    """Until the controller's cache holds the pod as the API server does and every sync it caused ran."""
    informer = h.controller.factory.informer(PODS, h.namespace)

    def cached() -> bool:
        live, seen = a.get("pods", pod), informer.get(h.namespace, pod)
        return (
            live is not None
            and seen is not None
            and (live["metadata"]["resourceVersion"] == seen["metadata"]["resourceVersion"])
        )

    await a.until_true(cached, f"{pod} in the controller's cache")
    await a.until_true(h.controller.queue_idle, "every sync it caused to have run")


def _warnings(a: Actors, job: str, reason: str) -> list[tuple[str, int]]:
    return [(e["message"], e.get("count", 1)) for e in a.events(job) if e["reason"] == reason]


async def test_unschedulable_workers_show_the_schedulers_message_once_and_clear_when_placed(
    harness: Harness,
) -> None:
    a = _actors(harness)
    await a.submitted_with_workers(mpijob("big", workers=2))

    for i in range(2):
        write_pod_status(a, f"big-worker-{i}", unschedulable(SCHEDULER_SAYS))
    stuck = await condition_appears(a, "big", "PodsStuck", "the pending reason on the MPIJob")
    assert stuck["status"] == "True" and stuck["reason"] == "Unschedulable"
    assert SCHEDULER_SAYS in stuck["message"], stuck
    assert "big-worker-0" in stuck["message"] and "big-worker-1" in stuck["message"], stuck

    # The scheduler tries again with the same answer: nothing new to say.
    write_pod_status(a, "big-worker-0", unschedulable(SCHEDULER_SAYS))
    await _seen_and_synced(harness, a, "big-worker-0")
    assert a.condition("big", "PodsStuck") == stuck
    assert _warnings(a, "big", "Unschedulable") == [(stuck["message"], 1)]

    a.set_workers("big", "Running", ready=True)
    await a.until_true(lambda: a.condition("big", "PodsStuck") is None, "the reason cleared once placed")


async def test_an_image_pull_error_and_its_back_off_are_one_problem_until_the_image_is_pulled(
    harness: Harness,
) -> None:
    a = _actors(harness)
    await a.submitted_with_workers(mpijob("img", workers=1))

    pull_error = pod_status("Pending", container("worker", waiting=("ErrImagePull", NOT_FOUND)))
    write_pod_status(a, "img-worker-0", pull_error)
    stuck = await condition_appears(a, "img", "PodsStuck", "the pull error on the MPIJob")
    assert stuck["reason"] == "ErrImagePull"
    assert "img-worker-0" in stuck["message"] and NOT_FOUND in stuck["message"], stuck

    # The kubelet alternates between the two while it backs off; that is not news each time.
    back_off = 'Back-off pulling image "docker.io/mpioperator/no-such-image:1"'
    for status in (
        pod_status("Pending", container("worker", waiting=("ImagePullBackOff", back_off))),
        pull_error,
    ):
        write_pod_status(a, "img-worker-0", status)
        await _seen_and_synced(harness, a, "img-worker-0")
        assert a.condition("img", "PodsStuck") == stuck
    assert _warnings(a, "img", "ErrImagePull") == [(stuck["message"], 1)]
    assert _warnings(a, "img", "ImagePullBackOff") == []

    write_pod_status(a, "img-worker-0", pod_status("Running", container("worker", ready=True), ready=True))
    await a.until_true(lambda: a.condition("img", "PodsStuck") is None, "the reason cleared once pulled")


WAITING = {
    "InvalidImageName": 'Failed to apply default image tag "Bad Image": couldn\'t parse image name',
    "CrashLoopBackOff": "back-off 40s restarting failed container=worker pod=why-worker-1_ns(uid)",
    "CreateContainerConfigError": 'secret "no-such-secret" not found',
}


@pytest.mark.parametrize("reason", sorted(WAITING))
async def test_a_worker_that_cannot_start_is_named_with_the_kubelets_reason(
    harness: Harness, reason: str
) -> None:
    a = _actors(harness)
    await a.submitted_with_workers(mpijob("why", workers=2))
    a.set_pod("why-worker-0", "Running", ready=True)
    restarts = 3 if reason == "CrashLoopBackOff" else 0
    write_pod_status(
        a,
        "why-worker-1",
        pod_status(
            "Running" if restarts else "Pending",
            container("worker", waiting=(reason, WAITING[reason]), restarts=restarts),
        ),
    )

    stuck = await condition_appears(a, "why", "PodsStuck", "the reason on the MPIJob")
    assert stuck["status"] == "True" and stuck["reason"] == reason
    assert "why-worker-1" in stuck["message"] and WAITING[reason] in stuck["message"], stuck
    assert "why-worker-0" not in stuck["message"]
    await harness.controller.recorder.flush()
    assert _warnings(a, "why", reason) == [(stuck["message"], 1)]


async def test_a_crash_looping_launcher_is_named_as_the_launcher(harness: Harness) -> None:
    a = _actors(harness)
    a.submit(mpijob("loop", workers=1))
    pod = await a.launched("loop")
    crash = "back-off 20s restarting failed container=launcher pod=" + pod
    write_pod_status(
        a, pod, pod_status("Running", container("launcher", waiting=("CrashLoopBackOff", crash)))
    )

    stuck = await condition_appears(a, "loop", "PodsStuck", "the launcher's crash loop")
    assert stuck["reason"] == "CrashLoopBackOff"
    assert f"launcher {pod}" in stuck["message"], stuck


async def _failed_launcher(
    a: Actors, job: str, *, message: str = "Job has reached the specified backoff limit"
) -> None:
    a.set_launcher_job(job, "Failed", reason="BackoffLimitExceeded", message=message, failed=1)


async def test_an_oom_killed_worker_names_itself_and_the_reason_in_failed(harness: Harness) -> None:
    a = _actors(harness)
    a.submit(mpijob("oom", workers=2, run_policy={"cleanPodPolicy": "None"}))
    launcher_pod = await a.launched("oom")
    write_pod_status(
        a, "oom-worker-1", pod_status("Failed", container("worker", terminated=("OOMKilled", 137, "")))
    )
    a.set_pod(launcher_pod, "Failed")
    await _failed_launcher(a, "oom")

    failed = await condition_appears(a, "oom", "Failed", "the job Failed")
    assert failed["reason"].startswith("BackoffLimitExceeded"), failed
    assert "oom-worker-1" in failed["message"] and "OOMKilled" in failed["message"], failed
    assert "exit code 137" in failed["message"], failed
    assert "oom-worker-0" not in failed["message"]


async def test_a_worker_restarted_after_an_exit_code_names_it_in_failed(harness: Harness) -> None:
    a = _actors(harness)
    a.submit(mpijob("exit", workers=2, run_policy={"cleanPodPolicy": "None"}))
    await a.until(lambda: a.launcher_job("exit"), "the launcher Job")
    a.set_workers("exit", "Running", ready=True)
    write_pod_status(
        a,
        "exit-worker-0",
        pod_status(
            "Running",
            container("worker", ready=True, restarts=1, last_terminated=("Error", 3, "")),
            ready=True,
        ),
    )
    await _failed_launcher(a, "exit")

    failed = await condition_appears(a, "exit", "Failed", "the job Failed")
    assert "exit-worker-0" in failed["message"] and "exit code 3" in failed["message"], failed
    assert "exit-worker-1" not in failed["message"]


LAST_WORDS = "Traceback (most recent call last):\nValueError: the learning rate must be positive"


async def test_a_failed_launchers_termination_message_and_exit_code_are_in_failed(harness: Harness) -> None:
    a = _actors(harness)
    a.submit(mpijob("words", workers=1))
    pod = await a.launched("words")
    write_pod_status(a, pod, pod_status("Failed", container("launcher", terminated=("Error", 2, LAST_WORDS))))
    await _failed_launcher(a, "words")

    failed = await condition_appears(a, "words", "Failed", "the job Failed")
    assert f"launcher {pod}" in failed["message"], failed
    assert "exit code 2" in failed["message"], failed
    assert "ValueError: the learning rate must be positive" in failed["message"], failed


async def test_last_words_of_a_launcher_restarted_in_place_outlive_its_pod(harness: Harness) -> None:
    """restartPolicy OnFailure (the launcher's default): the kubelet restarts the container in place and
    the Job controller deletes the pod when the back-off limit is reached, before the Job says Failed."""
    a = _actors(harness)
    a.submit(mpijob("gone", workers=1))
    pod = await a.launched("gone")
    write_pod_status(
        a,
        pod,
        pod_status("Running", container("launcher", restarts=1, last_terminated=("Error", 2, LAST_WORDS))),
    )
    await a.until_true(
        lambda: a.status("gone").get("podCounts", {}).get("Launcher", {}).get("restarts") == 1,
        "the restart counted",
    )
    a.rest.delete(a.path("pods", pod))
    await a.until_true(lambda: a.get("pods", pod) is None, "the launcher pod gone")
    await _failed_launcher(a, "gone")

    failed = await condition_appears(a, "gone", "Failed", "the job Failed")
    assert "exit code 2" in failed["message"] and "learning rate must be positive" in failed["message"], (
        failed
    )


def _launcher_spec(a: Actors, job: str) -> Obj:
    launcher = a.launcher_job(job)
    assert launcher is not None
    spec: Obj = launcher["spec"]["template"]["spec"]
    return spec


async def test_the_launcher_falls_back_to_its_log_for_a_termination_message(harness: Harness) -> None:
    a = _actors(harness)
    a.submit(mpijob("fallback", workers=1))
    mine = mpijob("mine", workers=1)
    mine["spec"]["mpiReplicaSpecs"]["Launcher"]["template"]["spec"]["containers"][0][
        "terminationMessagePolicy"
    ] = "File"
    a.submit(mine)

    await a.until(lambda: a.launcher_job("fallback") and a.launcher_job("mine"), "both launcher Jobs")
    assert (
        _launcher_spec(a, "fallback")["containers"][0]["terminationMessagePolicy"] == "FallbackToLogsOnError"
    )
    assert _launcher_spec(a, "mine")["containers"][0]["terminationMessagePolicy"] == "File"


async def test_keep_failed_launcher_annotation_makes_each_attempt_a_pod_the_job_controller_keeps(
    harness: Harness,
) -> None:
    a = _actors(harness)
    kept = mpijob("kept", workers=1, annotations={"mpioperator.io/keep-failed-launcher": "true"})
    a.submit(kept)
    a.submit(mpijob("plain", workers=1))

    await a.until(lambda: a.launcher_job("kept") and a.launcher_job("plain"), "both launcher Jobs")
    assert _launcher_spec(a, "kept")["restartPolicy"] == "Never"
    assert _launcher_spec(a, "plain")["restartPolicy"] == "OnFailure"
