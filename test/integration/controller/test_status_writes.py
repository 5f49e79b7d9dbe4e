"""Whose MPIJob status write wins, on a real API server (decisions-local L42).

Our status write never replaces a status newer than the one the sync computed it from: a Conflict ends
the sync, and the next one computes the status again from the newer object, as upstream's does. A sync
that fails writes no status at all, so the job's resourceVersion moves only when something changed.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from mpioperator.kube.resources import MPIJOBS, Resource
from mpioperator.testing.cluster import LocalCluster
from mpioperator.testing.mpijobs import mpijob
from mpioperator.testing.rest import RestError
from test.integration.controller.actors import Actors, now
from test.integration.controller.conftest import CountingWriter, Harness, running_controller

Obj = dict[str, Any]
# A condition the operator never sets, as Kueue or a second controller would add one.
THEIRS = {
    "type": "QuotaReserved",
    "status": "True",
    "reason": "QuotaReserved",
    "message": "admitted elsewhere",
}


@dataclass
class CutInBeforeOurStatusWrite(CountingWriter):
    """Runs `cut_in` once, just before the controller's first MPIJob status write leaves: another client's
    write lands between the read the sync computed from and the sync's own write."""

    cut_in: Callable[[], Awaitable[None]] | None = None

    async def update_status(self, res: Resource, body: Obj, namespace: str | None = None) -> Obj:
        if res is MPIJOBS and self.cut_in is not None:
            cut_in, self.cut_in = self.cut_in, None
            await cut_in()
        written: Obj = await self.__getattr__("update_status")(res, body, namespace)
        return written


def _idle(h: Harness) -> bool:
    return h.controller.queue_idle()


def _reconcile_errors(h: Harness) -> float:
    return h.registry.get_sample_value("mpi_operator_reconcile_errors_total") or 0.0


def _conditions(status: Obj) -> dict[str, Obj]:
    return {c["type"]: c for c in status.get("conditions") or ()}


async def test_a_status_another_client_writes_between_our_read_and_our_write_survives(
    mpijob_crd: LocalCluster, make_namespace: Any
) -> None:
    namespace = make_namespace(mpijob_crd)
    a = Actors(mpijob_crd, namespace)

    async def another_writer() -> None:
        current = a.get("mpijobs", "shared")
        assert current is not None
        stamp = now()
        condition = {**THEIRS, "lastTransitionTime": stamp, "lastUpdateTime": stamp}
        current["status"] = {**(current.get("status") or {}), "conditions": [condition]}
        a.rest.request("PUT", a.path("mpijobs", "shared") + "/status", current)

    async with running_controller(mpijob_crd, namespace, writer_type=CutInBeforeOurStatusWrite) as h:
        assert isinstance(h.writer, CutInBeforeOurStatusWrite)
        h.writer.cut_in = another_writer
        a.submit(mpijob("shared", workers=1))
        await a.until_true(lambda: h.writer.cut_in is None, "the other client's status write")
        # Ours: the startTime (the Created condition is set only on a job without conditions, as upstream's).
        await a.until_true(lambda: "startTime" in a.status("shared"), "our status write")
        await a.until_true(lambda: _idle(h), "the controller idle")

        conditions = _conditions(a.status("shared"))
        assert "QuotaReserved" in conditions, f"the other client's condition was overwritten: {conditions}"
        assert {k: conditions["QuotaReserved"][k] for k in THEIRS} == THEIRS
        ours = [body for verb, _, name, body in h.writer.sent if (verb, name) == ("update_status", "shared")]
        assert ours, "no status write of ours"
        # Every status we wrote after theirs was computed from theirs.
        assert all("QuotaReserved" in _conditions((b or {}).get("status") or {}) for b in ours[1:]), ours
        assert _reconcile_errors(h) == 0, "a conflict counted as a failed sync"


async def test_while_a_child_keeps_failing_another_clients_get_then_update_succeeds_the_first_time(
    mpijob_crd: LocalCluster, make_namespace: Any
) -> None:
    namespace = make_namespace(mpijob_crd)
    a = Actors(mpijob_crd, namespace)
    # A Service of the job's name that is not the job's: each sync stops there with ErrResourceExists and is
    # retried with back-off (upstream's TestServiceNotControlledByUs).
    a.rest.create(
        a.path("services"),
        {"metadata": {"name": "blocked"}, "spec": {"clusterIP": "None", "selector": {"app": "theirs"}}},
    )
    a.submit(mpijob("blocked", workers=1))
    read = a.get("mpijobs", "blocked")  # as Kueue or a user's script reads the job before editing it
    assert read is not None

    async with running_controller(mpijob_crd, namespace) as h:
        await a.until_true(lambda: _reconcile_errors(h) >= 3, "three failed syncs")
        read["metadata"].setdefault("labels", {})["kueue.x-k8s.io/queue-name"] = "other-queue"
        try:
            updated = a.rest.request("PUT", a.path("mpijobs", "blocked"), read)
        except RestError as exc:
            raise AssertionError(f"the update after a GET was refused: {exc.status} {exc.body}") from None
        assert updated["metadata"]["labels"]["kueue.x-k8s.io/queue-name"] == "other-queue"
        assert a.status("blocked") == {}, "a failed sync wrote status"

        # Once the Service is out of the way the job starts, and its creation was announced once.
        a.rest.request("DELETE", a.path("services", "blocked"))
        await a.until_true(
            lambda: "Created" in _conditions(a.status("blocked")), "the job's first successful sync", 60
        )
        await h.controller.recorder.flush()
        assert a.event_reasons("blocked").count("MPIJobCreated") == 1


async def test_a_new_leader_does_not_announce_again_a_job_whose_syncs_keep_failing(
    mpijob_crd: LocalCluster, make_namespace: Any
) -> None:
    namespace = make_namespace(mpijob_crd)
    a = Actors(mpijob_crd, namespace)
    # A ConfigMap of the job's name that is not the job's: each sync makes the Service and Secret, then stops.
    a.rest.create(a.path("configmaps"), {"metadata": {"name": "again-config"}, "data": {"a": "b"}})
    a.submit(mpijob("again", workers=1))

    for leader in ("first", "second"):
        async with running_controller(mpijob_crd, namespace) as h:
            await a.until_true(lambda: _reconcile_errors(h) >= 2, f"the {leader} leader's failed syncs")
            await h.controller.recorder.flush()

    assert a.status("again") == {}
    assert a.get("services", "again") is not None
    reasons = a.event_reasons("again")
    assert reasons.count("MPIJobCreated") == 1, reasons
    assert "ErrResourceExists" in reasons
