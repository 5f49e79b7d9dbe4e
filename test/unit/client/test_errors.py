"""API answers become errors that name the problem and the job, never bare HTTP codes."""

from __future__ import annotations

from typing import Any

from mpioperator.client.errors import (
    ApiRequestFailed,
    ApiUnreachable,
    CRDNotInstalled,
    InvalidMPIJob,
    MPIJobAlreadyExists,
    MPIJobNotFound,
    NamespaceNotFound,
    PermissionDenied,
    translate,
)
from mpioperator.kube.errors import error_from_status


def answer(code: int, reason: str, message: str, details: dict[str, Any] | None = None) -> Any:
    body: dict[str, Any] = {"kind": "Status", "code": code, "reason": reason, "message": message}
    if details is not None:
        body["details"] = details
    return error_from_status(code, body)


def test_missing_job_names_namespace_and_name() -> None:
    err = translate(
        answer(404, "NotFound", 'mpijobs.kubeflow.org "pi" not found', {"name": "pi", "kind": "mpijobs"}),
        namespace="team-a",
        name="pi",
    )
    assert isinstance(err, MPIJobNotFound)
    assert str(err) == "MPIJob team-a/pi not found"


def test_create_in_a_missing_namespace_names_the_namespace() -> None:
    err = translate(
        answer(404, "NotFound", 'namespaces "nope" not found', {"name": "nope", "kind": "namespaces"}),
        namespace="nope",
        name="pi",
    )
    assert isinstance(err, NamespaceNotFound)
    assert str(err) == "namespace 'nope' not found"


def test_a_404_that_names_nothing_means_the_crd_is_missing() -> None:
    err = translate(
        answer(404, "NotFound", "the server could not find the requested resource"), namespace="a"
    )
    assert isinstance(err, CRDNotInstalled)
    assert "install the operator" in str(err)


def test_conflicting_create_names_the_job() -> None:
    err = translate(
        answer(409, "AlreadyExists", 'mpijobs.kubeflow.org "pi" already exists'), namespace="a", name="pi"
    )
    assert isinstance(err, MPIJobAlreadyExists)
    assert str(err) == "MPIJob a/pi already exists"


def test_schema_rejection_keeps_the_servers_reasons() -> None:
    message = 'MPIJob.kubeflow.org "pi" is invalid: spec.slotsPerWorker: Invalid value: -1'
    err = translate(answer(422, "Invalid", message), namespace="a", name="pi")
    assert isinstance(err, InvalidMPIJob)
    assert str(err) == f"MPIJob pi is invalid: {message}"


def test_forbidden_keeps_the_servers_words() -> None:
    message = 'mpijobs.kubeflow.org is forbidden: User "bob" cannot list resource "mpijobs"'
    err = translate(answer(403, "Forbidden", message), namespace="a")
    assert isinstance(err, PermissionDenied)
    assert str(err) == message


def test_no_answer_at_all_says_the_server_is_unreachable() -> None:
    err = translate(error_from_status(0, {"message": "ConnectionRefusedError: refused"}), namespace="a")
    assert isinstance(err, ApiUnreachable)
    assert str(err) == "cannot reach the API server: ConnectionRefusedError: refused"


def test_anything_else_keeps_status_and_message() -> None:
    err = translate(answer(500, "InternalError", "etcd is down"), namespace="a", name="pi")
    assert isinstance(err, ApiRequestFailed)
    assert err.status == 500
    assert str(err) == "500 InternalError: etcd is down"
