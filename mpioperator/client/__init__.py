"""The Python SDK for MPIJobs (`kubeflow.org/v2beta1`), public and documented in docs/sdk.md.

    from mpioperator.client import MPIJobBuilder, MPIJobClient

    job = MPIJobBuilder("pi").image("mpioperator/mpi-pi:openmpi").workers(2).build()
    with MPIJobClient() as client:                # kubeconfig and namespace as kubectl finds them
        client.create(job)
        client.wait("pi", timeout=600)
        print(client.logs("pi"))

`AsyncMPIJobClient` offers the same calls as coroutines. Every failure is an `MPIJobError` subclass whose
message names the job and the problem.
"""

from mpioperator.client.aio import AsyncMPIJobClient
from mpioperator.client.builder import (
    CleanPodPolicy,
    LauncherCreationPolicy,
    MPIImplementation,
    MPIJobBuilder,
    ReplicaType,
    RestartPolicy,
)
from mpioperator.client.errors import (
    ApiRequestFailed,
    ApiUnreachable,
    ConfigurationError,
    CRDNotInstalled,
    InvalidMPIJob,
    LauncherNotFound,
    MPIJobAlreadyExists,
    MPIJobError,
    MPIJobFailed,
    MPIJobNotFound,
    NamespaceNotFound,
    PermissionDenied,
    WaitTimeout,
)
from mpioperator.client.status import ReplicaCounts, finished, phase, progress, replica_counts
from mpioperator.client.sync import MPIJobClient

__all__ = [
    "ApiRequestFailed",
    "ApiUnreachable",
    "AsyncMPIJobClient",
    "CRDNotInstalled",
    "CleanPodPolicy",
    "ConfigurationError",
    "InvalidMPIJob",
    "LauncherCreationPolicy",
    "LauncherNotFound",
    "MPIImplementation",
    "MPIJobAlreadyExists",
    "MPIJobBuilder",
    "MPIJobClient",
    "MPIJobError",
    "MPIJobFailed",
    "MPIJobNotFound",
    "NamespaceNotFound",
    "PermissionDenied",
    "ReplicaCounts",
    "ReplicaType",
    "RestartPolicy",
    "WaitTimeout",
    "finished",
    "phase",
    "progress",
    "replica_counts",
]
