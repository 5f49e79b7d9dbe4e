"""A failed sync is logged: the API server's refusal in one line, a bug with its traceback once."""

from __future__ import annotations

import structlog
from prometheus_client import CollectorRegistry

from mpioperator.clock import FakeClock
from mpioperator.controller.controller import ControllerSettings, MPIJobController
from mpioperator.controller.errors import StatusConflict, SyncError
from mpioperator.controller.metrics import JobMetrics
from mpioperator.controller.sync import SyncResult
from mpioperator.controller.unexpected import FirstSeen
from mpioperator.kube import errors
from mpioperator.kube.client import KubeClient


def _controller(failure: Exception) -> MPIJobController:
    # Never started: no request is made; only the sync handler's failure is under test.
    controller = MPIJobController(
        KubeClient.explicit("https://127.0.0.1:1"),
        JobMetrics(CollectorRegistry()),
        settings=ControllerSettings(namespaces=("ns",)),
        clock=FakeClock(),
    )

    async def failing(key: str) -> SyncResult:
        raise failure

    controller.syncer.sync = failing  # type: ignore[method-assign]
    return controller


def _bug() -> Exception:
    job: dict[str, object] = {}
    try:
        job["spec"]  # a KeyError raised at a fixed place, as a bug would
    except KeyError as exc:
        return exc
    raise AssertionError("unreachable")


async def test_a_bug_is_logged_with_its_traceback_once_then_in_one_line_per_retry() -> None:
    controller = _controller(_bug())
    with structlog.testing.capture_logs() as logs:
        for _ in range(3):
            await controller._process("ns/pi")
    await controller.queue.close()  # ends the retry timer each failure armed

    failures = [entry for entry in logs if "error syncing" in entry["event"]]
    assert [entry["log_level"] for entry in failures] == ["error", "warning", "warning"]
    assert isinstance(failures[0]["exc_info"], KeyError)
    assert all("exc_info" not in entry for entry in failures[1:])
    assert failures[1]["error"] == "KeyError: 'spec'"


async def test_a_refusal_by_the_api_server_is_one_line_with_its_status_every_time() -> None:
    refusal = errors.Invalid(422, "Invalid", 'Pod "pi-worker-0" is invalid: bad')
    failure = SyncError(refusal.server_message)
    failure.__cause__ = refusal
    controller = _controller(failure)
    with structlog.testing.capture_logs() as logs:
        for _ in range(2):
            await controller._process("ns/pi")
    await controller.queue.close()

    failures = [entry for entry in logs if "error syncing" in entry["event"]]
    assert [(e["log_level"], e["error"], e["status"]) for e in failures] == [
        ("warning", 'Pod "pi-worker-0" is invalid: bad', 422)
    ] * 2
    assert all("exc_info" not in entry for entry in failures)


def test_the_same_error_from_the_same_place_is_seen_once_and_another_is_new() -> None:
    seen = FirstSeen()
    assert seen.first(_bug()) is True
    assert seen.first(_bug()) is False
    assert seen.first(ValueError("other")) is True


def test_the_memory_of_errors_is_bounded() -> None:
    seen = FirstSeen(capacity=2)
    for message in ("a", "b", "c"):
        assert seen.first(ValueError(message))
    assert seen.first(ValueError("a")) is True  # forgotten: the oldest went first


async def test_a_status_conflict_is_retried_with_back_off_in_one_info_line_not_as_an_error() -> None:
    controller = _controller(StatusConflict("default/pi"))
    errors_before = controller._metrics.reconcile_errors._value.get()
    with structlog.testing.capture_logs() as logs:
        for _ in range(3):
            await controller._process("ns/pi")
    requeues = controller.queue.num_requeues("ns/pi")
    await controller.queue.close()

    assert requeues == 3  # each retried with the key's growing back-off, never in a tight loop
    assert controller._metrics.reconcile_errors._value.get() == errors_before
    assert [(e["log_level"], e["event"]) for e in logs] == [
        ("info", "status changed since read; syncing again")
    ] * 3
