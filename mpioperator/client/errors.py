"""What can go wrong when driving MPIJobs, as exceptions that name the problem and the object.

Every error the SDK raises is an `MPIJobError`; its message is one line fit for a terminal. API answers
are translated by `translate`, so callers never see HTTP codes unless the server said something the SDK
has no name for (`ApiRequestFailed`, which keeps the status).
"""

from __future__ import annotations

from mpioperator.kube.errors import ApiError


class MPIJobError(Exception):
    """Base of every error the SDK and the CLI report."""


class ConfigurationError(MPIJobError):
    """No usable kubeconfig (missing file, unknown context, no cluster)."""


class ApiUnreachable(MPIJobError):
    """The API server did not answer at all."""


class CRDNotInstalled(MPIJobError):
    def __init__(self) -> None:
        super().__init__(
            "the cluster does not serve kubeflow.org/v2beta1 MPIJobs: install the operator first "
            "(kubectl apply --server-side -f deploy/v2beta1/mpi-operator.yaml)"
        )


class NamespaceNotFound(MPIJobError):
    def __init__(self, namespace: str) -> None:
        super().__init__(f"namespace {namespace!r} not found")
        self.namespace = namespace


class _OfOneJob(MPIJobError):
    """An error about one MPIJob, which it names; `namespace` and `name` say which."""

    def __init__(self, namespace: str, name: str, what: str) -> None:
        super().__init__(f"MPIJob {namespace}/{name} {what}")
        self.namespace = namespace
        self.name = name


class MPIJobNotFound(_OfOneJob):
    def __init__(self, namespace: str, name: str, detail: str = "") -> None:
        super().__init__(namespace, name, f"not found{detail}")


class MPIJobAlreadyExists(_OfOneJob):
    def __init__(self, namespace: str, name: str) -> None:
        super().__init__(namespace, name, "already exists")


class InvalidMPIJob(MPIJobError):
    """The job would be refused: by the builder's checks, a manifest's shape, or the API server's schema."""

    def __init__(self, name: str, problems: str) -> None:
        super().__init__(f"MPIJob {name or '(unnamed)'} is invalid: {problems}")
        self.name = name
        self.problems = problems


class PermissionDenied(MPIJobError):
    pass


class LauncherNotFound(_OfOneJob):
    def __init__(self, namespace: str, name: str, detail: str = "has no launcher pod yet") -> None:
        super().__init__(namespace, name, detail)


class WaitTimeout(_OfOneJob):
    def __init__(self, namespace: str, name: str, seconds: float, phase: str) -> None:
        super().__init__(namespace, name, f"still {phase} after {seconds:g}s")
        self.phase = phase


class MPIJobFailed(MPIJobError):
    def __init__(self, namespace: str, name: str, reason: str, message: str) -> None:
        super().__init__(f"MPIJob {namespace}/{name} failed: {reason}: {message}" if reason else message)
        self.namespace = namespace
        self.name = name
        self.reason = reason


class ApiRequestFailed(MPIJobError):
    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


def translate(exc: ApiError, *, namespace: str, name: str = "") -> MPIJobError:
    """The named error for an API answer about MPIJob `namespace/name` (or about the namespace's list)."""
    details = exc.body.get("details") or {}
    if exc.status == 0:
        return ApiUnreachable(f"cannot reach the API server: {exc.message}")
    if exc.status == 404:
        if details.get("kind") == "namespaces":
            return NamespaceNotFound(str(details.get("name") or namespace))
        if not details:
            # A 404 that names no object is the server saying it has no such resource type.
            return CRDNotInstalled()
        return MPIJobNotFound(namespace, name)
    if exc.status == 409 and exc.reason == "AlreadyExists":
        return MPIJobAlreadyExists(namespace, name)
    if exc.status == 422:
        return InvalidMPIJob(name, exc.server_message)
    if exc.status in (401, 403):
        return PermissionDenied(exc.server_message)
    return ApiRequestFailed(exc.status, f"{exc.status} {exc.reason}: {exc.server_message}".strip())
