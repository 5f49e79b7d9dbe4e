"""WaitForWorkersReady keeps its promise across suspend and resume (upstream #615, open; issue 17, part 5).

Upstream counts the Ready workers of a suspended job (there are none) against the workers it has (none
either), so it creates the launcher Job while suspended, and at resume it unsuspends that Job in the same
sync that creates the workers: the launcher starts before any worker is Ready.
"""

from __future__ import annotations

from mpioperator.testing.mpijobs import mpijob
from test.integration.controller.actors import Actors
from test.integration.controller.conftest import Harness

WAIT = {"launcherCreationPolicy": "WaitForWorkersReady"}


def _launcher_suspended(a: Actors, job: str) -> bool | None:
    launcher = a.launcher_job(job)
    return None if launcher is None else bool(launcher["spec"].get("suspend"))


async def test_a_suspended_job_waiting_for_its_workers_gets_no_launcher_job(harness: Harness) -> None:
    a = Actors(harness.cluster, harness.namespace)
    a.submit(mpijob("held", workers=2, run_policy={"suspend": True}, spec=WAIT))

    await a.until_true(lambda: (a.condition("held", "Suspended") or {}).get("status") == "True", "Suspended")
    await a.until_true(harness.controller.queue_idle, "every sync to have run")
    assert a.launcher_job("held") is None
    assert a.worker_pods("held") == []
    for name in ("held", "held-config", "held-ssh"):
        assert any(a.get(kind, name) for kind in ("services", "configmaps", "secrets")), name


async def test_resuming_a_new_job_creates_the_launcher_only_once_the_workers_are_ready(
    harness: Harness,
) -> None:
    a = Actors(harness.cluster, harness.namespace)
    a.submit(mpijob("fresh", workers=2, run_policy={"suspend": True}, spec=WAIT))
    await a.until_true(lambda: (a.condition("fresh", "Suspended") or {}).get("status") == "True", "Suspended")

    a.patch_spec("fresh", {"spec": {"runPolicy": {"suspend": False}}})
    await a.until_true(lambda: len(a.worker_pods("fresh")) == 2, "workers created on resume")
    a.set_workers("fresh", "Running", ready=False)
    await a.until_true(
        lambda: a.status("fresh").get("replicaStatuses", {}).get("Worker") == {"active": 2}, "workers seen"
    )
    assert a.launcher_job("fresh") is None

    a.set_workers("fresh", "Running", ready=True)
    await a.until_true(lambda: _launcher_suspended(a, "fresh") is False, "a running launcher Job")


async def test_resuming_a_job_that_ran_before_starts_its_launcher_only_once_the_workers_are_ready_again(
    harness: Harness,
) -> None:
    a = Actors(harness.cluster, harness.namespace)
    await a.submitted_with_workers(mpijob("again", workers=2, spec=WAIT))
    a.set_workers("again", "Running", ready=True)
    await a.until_true(lambda: _launcher_suspended(a, "again") is False, "the launcher Job")

    a.patch_spec("again", {"spec": {"runPolicy": {"suspend": True}}})
    await a.until_true(lambda: _launcher_suspended(a, "again") is True, "the launcher suspended")
    await a.until_true(lambda: a.worker_pods("again") == [], "workers deleted")

    a.patch_spec("again", {"spec": {"runPolicy": {"suspend": False}}})
    await a.until_true(lambda: len(a.worker_pods("again")) == 2, "workers created on resume")
    await a.until_true(
        lambda: (a.condition("again", "Suspended") or {}).get("reason") == "MPIJobResumed", "resumed"
    )
    await a.until_true(harness.controller.queue_idle, "every sync of the resume to have run")
    assert _launcher_suspended(a, "again") is True, "the launcher started before its workers were Ready"

    a.set_workers("again", "Running", ready=True)
    await a.until_true(lambda: _launcher_suspended(a, "again") is False, "the launcher resumed")
