"""Events about MPIJobs, field by field as upstream's recorder makes them (client-go's legacy recorder,
component `mpi-job-controller`, no host), and messages carrying the API server's words only."""

from __future__ import annotations

import asyncio
import datetime as dt
from typing import Any

import pytest

from mpioperator.api.defaults import set_defaults
from mpioperator.api.extensions.parsed import parse
from mpioperator.api.objects import Obj
from mpioperator.controller.children import ChildReconciler
from mpioperator.controller.errors import SyncError
from mpioperator.controller.events import MAX_QUEUED_EVENTS, EventRecorder
from mpioperator.controller.ports import Listers
from mpioperator.controller.rejections import ChildRejected
from mpioperator.kube import errors
from mpioperator.kube.delete_options import BACKGROUND, DeleteOptions
from mpioperator.kube.resources import Resource
from mpioperator.testing.mpijobs import mpijob

NOW = dt.datetime(2026, 11, 23, 12, 30, 5, tzinfo=dt.UTC)


class Written:
    """An event writer keeping what it was asked to write; creation may be made to fail."""

    def __init__(self, fail_with: errors.ApiError | None = None) -> None:
        self.created: list[Obj] = []
        self.patched: list[tuple[str, Obj | list[Any]]] = []
        self.fail_with = fail_with

    async def create(self, res: Resource, body: Obj, namespace: str | None = None) -> Obj:
        if self.fail_with is not None and res.plural != "events":
            raise self.fail_with
        self.created.append(body)
        return body

    async def patch(
        self, res: Resource, name: str, body: Obj | list[Any], namespace: str | None = None, **_: Any
    ) -> Obj:
        self.patched.append((name, body))
        return {}

    async def get(self, res: Resource, name: str, namespace: str | None = None) -> Obj:
        raise errors.NotFound(404, "NotFound", f"{name} not found")

    async def update(self, res: Resource, body: Obj, namespace: str | None = None) -> Obj:
        raise AssertionError("no update expected")

    async def update_status(self, res: Resource, body: Obj, namespace: str | None = None) -> Obj:
        raise AssertionError("no status update expected")

    async def delete(
        self, res: Resource, name: str, namespace: str | None = None, options: DeleteOptions = BACKGROUND
    ) -> Obj:
        raise AssertionError("no delete expected")


def _job() -> Obj:
    job = mpijob("pi", workers=1)
    job["metadata"].update({"namespace": "ns", "uid": "u-1", "resourceVersion": "42"})
    return job


async def _recorded(events: list[tuple[str, str, str]]) -> Written:
    writer = Written()
    recorder = EventRecorder(
        writer,
        component="mpi-job-controller",
        kind="MPIJob",
        api_version="kubeflow.org/v2beta1",
        utcnow=lambda: NOW,
    )
    recorder.start()
    for event_type, reason, message in events:
        recorder.record(_job(), event_type, reason, message)
    await recorder.flush()
    await recorder.stop()
    return writer


async def test_an_event_has_exactly_upstreams_fields() -> None:
    writer = await _recorded([("Normal", "MPIJobCreated", "MPIJob ns/pi is created.")])

    [event] = writer.created
    expected: Obj = {
        "apiVersion": "v1",
        "kind": "Event",
        "involvedObject": {
            "kind": "MPIJob",
            "namespace": "ns",
            "name": "pi",
            "uid": "u-1",
            "apiVersion": "kubeflow.org/v2beta1",
            "resourceVersion": "42",
        },
        "reason": "MPIJobCreated",
        "message": "MPIJob ns/pi is created.",
        "type": "Normal",
        "source": {"component": "mpi-job-controller"},
        "firstTimestamp": "2026-11-23T12:30:05Z",
        "lastTimestamp": "2026-11-23T12:30:05Z",
        "count": 1,
        "reportingComponent": "mpi-job-controller",
        "reportingInstance": "",
    }
    metadata = event.pop("metadata")
    assert sorted(event) == sorted(expected)
    for field_name, value in expected.items():
        assert event[field_name] == value, field_name
    assert metadata["namespace"] == "ns"
    # client-go's name: the object's name, a dot, then a hexadecimal number from the clock.
    name, _, suffix = metadata["name"].partition(".")
    assert name == "pi" and int(suffix, 16) > 0


async def test_a_repeated_event_raises_the_count_of_the_first_instead_of_adding_one() -> None:
    writer = await _recorded([("Normal", "MPIJobSuspended", "MPIJob suspended")] * 2)

    [event] = writer.created
    assert writer.patched == [
        (event["metadata"]["name"], {"count": 2, "lastTimestamp": "2026-11-23T12:30:05Z"})
    ]


class _NoObjects:
    def get(self, namespace: str, name: str) -> Obj | None:
        return None

    def select(self, namespace: str, labels: Any) -> list[Obj]:
        return []

    def owned_by(self, uid: str) -> list[Obj]:
        return []


class _Recorder:
    def __init__(self) -> None:
        self.events: list[tuple[str, str, str]] = []

    def record(self, obj: Obj, event_type: str, reason: str, message: str) -> None:
        self.events.append((event_type, reason, message))


async def test_a_failed_worker_create_is_reported_in_the_api_servers_words() -> None:
    """Upstream's message is `worker pod created failed: <err>` where a client-go error's text is the
    Status message alone: no HTTP code, no reason."""
    failure = "Internal error occurred: etcdserver: request timed out"
    writer = Written(fail_with=errors.ApiError(500, "InternalError", failure))
    recorder = _Recorder()
    none = _NoObjects()
    reconciler = ChildReconciler(
        Listers(none, none, none, none, none, none),
        writer,
        recorder,
        cluster_domain="",
    )

    with pytest.raises(SyncError) as raised:
        await reconciler.workers(job := set_defaults(_job()), parse(job))

    assert recorder.events == [("Warning", "MPIJobFailed", f"worker pod created failed: {failure}")]
    assert str(raised.value) == failure


async def test_a_worker_pod_refused_for_good_is_no_event_here_but_a_rejection_for_the_sync() -> None:
    """L11: the sync holds the job and records one ChildRejected event itself, never one per retry."""
    refusal = 'Pod "pi-worker-0" is invalid: spec.containers[0].name: Invalid value: "Bad_Name": bad'
    writer = Written(fail_with=errors.Invalid(422, "Invalid", refusal))
    recorder = _Recorder()
    none = _NoObjects()
    reconciler = ChildReconciler(
        Listers(none, none, none, none, none, none), writer, recorder, cluster_domain=""
    )

    with pytest.raises(ChildRejected) as raised:
        await reconciler.workers(job := set_defaults(_job()), parse(job))

    assert recorder.events == []
    assert raised.value.message == f"Pod pi-worker-0 could not be created: {refusal}"


def test_an_api_error_without_a_message_names_its_code() -> None:
    assert errors.ApiError(500, "InternalError", "").server_message == "500 InternalError"
    assert errors.ApiError(503, "", "").server_message == "status 503"
    assert errors.Invalid(422, "Invalid", "x is invalid").server_message == "x is invalid"


async def test_events_are_sent_in_the_order_recorded() -> None:
    writer = await _recorded(
        [
            ("Normal", "MPIJobCreated", "a"),
            ("Normal", "MPIJobRunning", "b"),
            ("Normal", "MPIJobSucceeded", "c"),
        ]
    )
    assert [e["reason"] for e in writer.created] == ["MPIJobCreated", "MPIJobRunning", "MPIJobSucceeded"]


def _recorder(writer: Any) -> EventRecorder:
    return EventRecorder(
        writer,
        component="mpi-job-controller",
        kind="MPIJob",
        api_version="kubeflow.org/v2beta1",
        utcnow=lambda: NOW,
    )


async def test_an_event_recorded_after_stop_is_dropped_not_queued() -> None:
    writer = Written()
    recorder = _recorder(writer)
    recorder.start()
    await recorder.stop()

    recorder.record(_job(), "Normal", "MPIJobRunning", "late")

    await asyncio.wait_for(recorder.flush(), 1)  # nothing waits in the queue
    assert writer.created == [] and recorder.dropped == 1


async def test_events_past_the_bound_are_dropped_and_counted() -> None:
    recorder = _recorder(Written())  # no sender running: nothing leaves the queue
    for i in range(MAX_QUEUED_EVENTS + 3):
        recorder.record(_job(), "Normal", "MPIJobRunning", f"m{i}")
    assert recorder.dropped == 3


class Stalled(Written):
    """The first create never returns (a hung API server)."""

    def __init__(self) -> None:
        super().__init__()
        self.reached = asyncio.Event()

    async def create(self, res: Resource, body: Obj, namespace: str | None = None) -> Obj:
        self.created.append(body)
        self.reached.set()
        await asyncio.Event().wait()
        return body


async def test_a_cancelled_sender_sends_nothing_more_and_leaves_nothing_queued() -> None:
    writer = Stalled()
    recorder = _recorder(writer)
    sender = asyncio.ensure_future(recorder.run())
    for i in range(5):
        recorder.record(_job(), "Normal", "MPIJobRunning", f"m{i}")
    await asyncio.wait_for(writer.reached.wait(), 1)

    sender.cancel()
    with pytest.raises(asyncio.CancelledError):
        await sender

    await asyncio.wait_for(recorder.flush(), 1)
    recorder.record(_job(), "Normal", "MPIJobRunning", "after")
    assert len(writer.created) == 1 and recorder.dropped == 5
