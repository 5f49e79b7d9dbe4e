"""A child the API server refuses for good holds the job with a condition (decisions-local L11).

Invalid (422) and Forbidden (403) answers name the object and the server's message in a `ChildRejected`
condition within seconds, with one Warning event, and the job is not retried until its spec changes;
transient answers keep the back-off. Everything here is a real API server; only the transient answers
a real server cannot give on demand (a 409 on a create, a 429, a 500) are injected at the client seam.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

import pytest

from mpioperator.kube import errors
from mpioperator.testing.cluster import LocalCluster
from mpioperator.testing.mpijobs import mpijob
from mpioperator.testing.rest import RestError
from test.integration.controller.actors import Actors
from test.integration.controller.admission import denying_policy
from test.integration.controller.conftest import CountingWriter, Harness, running_controller
from test.integration.controller.waits import condition_appears

Obj = dict[str, Any]
REPORTED_WITHIN = 5.0


def _actors(h: Harness) -> Actors:
    return Actors(h.cluster, h.namespace)


def _bad_container_name(name: str) -> Obj:
    body = mpijob(name, workers=2)
    body["spec"]["mpiReplicaSpecs"]["Worker"]["template"]["spec"]["containers"][0]["name"] = "Bad_Name"
    return body


def _missing_volume(name: str) -> Obj:
    body = mpijob(name, workers=2)
    launcher = body["spec"]["mpiReplicaSpecs"]["Launcher"]["template"]["spec"]["containers"][0]
    launcher["volumeMounts"] = [{"name": "no-such-volume", "mountPath": "/data"}]
    return body


# (the job, the object named in the condition, the field the API server names)
REFUSED = {
    "invalid-container-name": (_bad_container_name, "Pod {}-worker-0", "spec.containers[0].name"),
    "missing-volume": (
        _missing_volume,
        "Job {}-launcher",
        "spec.template.spec.containers[0].volumeMounts[0].name",
    ),
}


def _warnings(a: Actors, job: str) -> list[Obj]:
    return [e for e in a.events(job) if e["type"] == "Warning"]


def _creates(h: Harness, job: str) -> list[tuple[str, str, str]]:
    return [w for w in h.writer.writes if w[0] == "create" and w[2].startswith(f"{job}-")]


async def _run_to_running(a: Actors, job: str) -> None:
    await a.launched(job)
    await a.until_true(lambda: (a.condition(job, "Running") or {}).get("status") == "True", f"{job} Running")


@pytest.mark.parametrize("case", sorted(REFUSED))
async def test_refused_template_is_named_in_a_condition_within_5s_with_one_warning_and_others_run(
    harness: Harness, case: str
) -> None:
    make, obj, field = REFUSED[case]
    a = _actors(harness)
    a.submit(make("bad"))
    a.submit(mpijob("good", workers=2))

    condition = await condition_appears(a, "bad", "ChildRejected", "the refusal reported", REPORTED_WITHIN)
    assert condition["status"] == "True" and condition["reason"] == "ChildInvalid"
    assert condition["message"].startswith(obj.format("bad") + " could not be created: "), condition
    assert field in condition["message"], condition
    created = a.condition("bad", "Created")
    assert created is not None and created["status"] == "True"

    await _run_to_running(a, "good")

    # More syncs of the held job, as further events or a restarted worker would cause: nothing is tried
    # again and nothing is recorded again.
    refused_creates = len(_creates(harness, "bad"))
    await harness.synced_again("bad", times=3)
    await harness.controller.recorder.flush()
    assert len(_creates(harness, "bad")) == refused_creates
    warnings = _warnings(a, "bad")
    assert len(warnings) == 1, warnings
    assert warnings[0]["reason"] == "ChildInvalid" and warnings[0].get("count", 1) == 1
    assert warnings[0]["message"] == condition["message"]
    assert a.event_reasons("bad").count("MPIJobCreated") == 1


async def test_a_refused_worker_template_costs_one_rejected_create_not_one_per_worker(
    harness: Harness,
) -> None:
    a = _actors(harness)
    body = _bad_container_name("wide")
    body["spec"]["mpiReplicaSpecs"]["Worker"]["replicas"] = 20
    a.submit(body)
    await condition_appears(a, "wide", "ChildRejected", "the refusal reported")

    pod_creates = [w for w in _creates(harness, "wide") if w[1] == "pods"]
    assert pod_creates == [("create", "pods", "wide-worker-0")]


async def test_fixing_the_template_lets_the_held_job_go_on_and_drops_the_condition(harness: Harness) -> None:
    a = _actors(harness)
    a.submit(_bad_container_name("fixme"))
    await condition_appears(a, "fixme", "ChildRejected", "the refusal reported")

    worker = a.get("mpijobs", "fixme")
    assert worker is not None
    template = worker["spec"]["mpiReplicaSpecs"]["Worker"]["template"]
    template["spec"]["containers"][0]["name"] = "worker"
    a.patch_spec("fixme", {"spec": {"mpiReplicaSpecs": {"Worker": {"template": template}}}})

    await a.until(lambda: a.launcher_job("fixme"), "the launcher Job once the workers are made")
    assert len(a.worker_pods("fixme")) == 2
    await a.until_true(lambda: a.condition("fixme", "ChildRejected") is None, "the condition removed")


@contextlib.contextmanager
def _policy_denying_pods(cluster: LocalCluster, namespace: str, message: str) -> Iterator[str]:
    """A ValidatingAdmissionPolicy, bound to `namespace` only, that denies every pod created there."""
    name = f"deny-pods-{namespace}"[:63]
    pods = {"apiGroups": [""], "apiVersions": ["v1"], "operations": ["CREATE"], "resources": ["pods"]}
    # Without a reason the API server answers a denial with 422 Invalid; quota and PodSecurity answer 403
    # Forbidden, which this asks for.
    denial = {"expression": "false", "message": message, "reason": "Forbidden"}
    with denying_policy(cluster.rest, name, namespace, pods, denial):
        yield name


def _policy_enforced(a: Actors) -> bool:
    probe = {"metadata": {"name": "probe"}, "spec": {"containers": [{"name": "c", "image": "i"}]}}
    try:
        a.rest.create(a.path("pods") + "?dryRun=All", probe)
    except RestError as exc:
        return exc.status == 403
    return False


async def test_a_worker_forbidden_by_a_validating_admission_policy_is_reported_the_same_way(
    harness: Harness,
) -> None:
    a = _actors(harness)
    message = "pods are not allowed in this namespace during the test"
    with _policy_denying_pods(harness.cluster, harness.namespace, message) as policy:
        await a.until_true(lambda: _policy_enforced(a), "the admission policy enforced")
        a.submit(mpijob("vap", workers=2))

        condition = await condition_appears(
            a, "vap", "ChildRejected", "the refusal reported", REPORTED_WITHIN
        )
        assert condition["status"] == "True" and condition["reason"] == "ChildForbidden"
        assert condition["message"].startswith("Pod vap-worker-0 could not be created: "), condition
        assert policy in condition["message"] and message in condition["message"], condition

        await harness.synced_again("vap", times=3)
        await harness.controller.recorder.flush()
        warnings = _warnings(a, "vap")
        assert [(w["reason"], w.get("count", 1)) for w in warnings] == [("ChildForbidden", 1)]
        assert [w for w in _creates(harness, "vap") if w[1] == "pods"] == [("create", "pods", "vap-worker-0")]


class _RefusesTheFirstLauncherCreate(CountingWriter):
    """Answers the first launcher Job create with a transient error, as a busy or racing server would;
    a real server gives none of these on demand (D2 allows injecting such faults at the client seam)."""

    fault: errors.ApiError = errors.Conflict(409, "Conflict", "the object has been modified")

    async def create(self, res: Any, body: Obj, namespace: str | None = None) -> Obj:
        name = body["metadata"]["name"]
        if res.plural == "jobs" and not any(w[:2] == ("create", "jobs") for w in self.writes):
            self.writes.append(("create", res.plural, name))
            raise self.fault
        created: Obj = await CountingWriter.__getattr__(self, "create")(res, body, namespace)
        return created


TRANSIENT = {
    "409": errors.Conflict(409, "Conflict", "Operation cannot be fulfilled: the object has been modified"),
    "429": errors.TooManyRequests(429, "TooManyRequests", "the server has received too many requests"),
    "500": errors.ApiError(500, "InternalError", "Internal error occurred: etcdserver: request timed out"),
    "504": errors.ServerTimeout(504, "Timeout", "the server was unable to return a response in time"),
}


@pytest.mark.parametrize("code", sorted(TRANSIENT))
async def test_a_transient_refusal_is_retried_with_back_off_and_reported_as_upstream_does(
    mpijob_crd: LocalCluster, make_namespace: Any, code: str
) -> None:
    class Writer(_RefusesTheFirstLauncherCreate):
        fault = TRANSIENT[code]

    async with running_controller(mpijob_crd, make_namespace(mpijob_crd), writer_type=Writer) as h:
        a = _actors(h)
        a.submit(mpijob("busy", workers=1))

        await a.until(lambda: a.launcher_job("busy"), "the launcher Job created on a retry")
        assert [w for w in h.writer.writes if w[:2] == ("create", "jobs")] == [
            ("create", "jobs", "busy-launcher"),
            ("create", "jobs", "busy-launcher"),
        ]
        assert a.condition("busy", "ChildRejected") is None
        await h.controller.recorder.flush()
        failed = [e for e in a.events("busy") if e["reason"] == "MPIJobFailed"]
        assert [e["message"] for e in failed] == [
            f"launcher pod created failed: {TRANSIENT[code].server_message}"
        ]


async def test_a_new_leader_records_nothing_again_for_a_held_job(
    mpijob_crd: LocalCluster, make_namespace: Any
) -> None:
    namespace = make_namespace(mpijob_crd)
    async with running_controller(mpijob_crd, namespace) as first:
        a = _actors(first)
        a.submit(_bad_container_name("again"))
        reported = await condition_appears(a, "again", "ChildRejected", "the refusal reported")
        await first.controller.recorder.flush()

    async with running_controller(mpijob_crd, namespace) as second:
        # The new leader syncs the job once: it tries the refused create once more and learns nothing new.
        await a.until_true(
            lambda: ("create", "pods", "again-worker-0") in second.writer.writes, "the new leader's sync"
        )
        await a.until_true(second.nothing_ready, "the new leader's queue drained")
        await second.controller.recorder.flush()
        assert [w for w in second.writer.writes if w[0] != "create"] == []

    assert a.condition("again", "ChildRejected") == reported
    assert [(e["reason"], e.get("count", 1)) for e in a.events("again")] == [
        ("MPIJobCreated", 1),
        ("ChildInvalid", 1),
    ]
