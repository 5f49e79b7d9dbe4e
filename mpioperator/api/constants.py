"""Names the MPIJob API shares with upstream: group, kinds, keys, enum values, reasons.

These are facts of the v2beta1 API; every value must stay byte-identical to upstream so
that tools reading child objects or status keep working after a switch.
"""

from __future__ import annotations

from typing import Final

GROUP: Final = "kubeflow.org"
VERSION: Final = "v2beta1"
API_VERSION: Final = f"{GROUP}/{VERSION}"
KIND: Final = "MPIJob"
LIST_KIND: Final = "MPIJobList"
PLURAL: Final = "mpijobs"
SINGULAR: Final = "mpijob"

OPERATOR_NAME: Final = "mpi-operator"
CONTROLLER_NAME: Final = "mpi-job-controller"
ENV_KUBEFLOW_NAMESPACE: Final = "KUBEFLOW_NAMESPACE"

# Replica types (keys of spec.mpiReplicaSpecs).
LAUNCHER: Final = "Launcher"
WORKER: Final = "Worker"

# spec.mpiImplementation
OPENMPI: Final = "OpenMPI"
INTEL: Final = "Intel"
MPICH: Final = "MPICH"
MPI_IMPLEMENTATIONS: Final = (OPENMPI, INTEL, MPICH)

# spec.launcherCreationPolicy
AT_STARTUP: Final = "AtStartup"
WAIT_FOR_WORKERS_READY: Final = "WaitForWorkersReady"
LAUNCHER_CREATION_POLICIES: Final = (AT_STARTUP, WAIT_FOR_WORKERS_READY)

# spec.runPolicy.cleanPodPolicy
CLEAN_POD_POLICY_UNDEFINED: Final = ""
CLEAN_POD_POLICY_NONE: Final = "None"
CLEAN_POD_POLICY_RUNNING: Final = "Running"
CLEAN_POD_POLICY_ALL: Final = "All"
CLEAN_POD_POLICIES: Final = (CLEAN_POD_POLICY_NONE, CLEAN_POD_POLICY_RUNNING, CLEAN_POD_POLICY_ALL)

# spec.mpiReplicaSpecs[*].restartPolicy
RESTART_POLICY_ALWAYS: Final = "Always"
RESTART_POLICY_ON_FAILURE: Final = "OnFailure"
RESTART_POLICY_NEVER: Final = "Never"
RESTART_POLICY_EXIT_CODE: Final = "ExitCode"
RESTART_POLICIES: Final = (
    RESTART_POLICY_ALWAYS,
    RESTART_POLICY_ON_FAILURE,
    RESTART_POLICY_NEVER,
    RESTART_POLICY_EXIT_CODE,
)
DEFAULT_RESTART_POLICY: Final = RESTART_POLICY_NEVER
DEFAULT_LAUNCHER_RESTART_POLICY: Final = RESTART_POLICY_ON_FAILURE

# spec.runPolicy.managedBy
KUBEFLOW_JOB_CONTROLLER: Final = "kubeflow.org/mpi-operator"
MULTIKUEUE_CONTROLLER: Final = "kueue.x-k8s.io/multikueue"
MANAGED_BY_VALUES: Final = (KUBEFLOW_JOB_CONTROLLER, MULTIKUEUE_CONTROLLER)

DEFAULT_SSH_AUTH_MOUNT_PATH: Final = "/root/.ssh"
DEFAULT_SLOTS_PER_WORKER: Final = 1

# Labels on child objects.
LABEL_REPLICA_INDEX: Final = "training.kubeflow.org/replica-index"
LABEL_REPLICA_TYPE: Final = "training.kubeflow.org/replica-type"
LABEL_OPERATOR_NAME: Final = "training.kubeflow.org/operator-name"
LABEL_JOB_NAME: Final = "training.kubeflow.org/job-name"
LABEL_JOB_ROLE: Final = "training.kubeflow.org/job-role"
ROLE_LAUNCHER: Final = "launcher"
ROLE_WORKER: Final = "worker"
# Ours (decisions-local): the labels of upstream's v1 operator, which Kubeflow's docs still select by
# (`kubectl get pods -l mpi_job_name=<job>,mpi_role_type=launcher`); values as the role label's.
LABEL_LEGACY_JOB_NAME: Final = "mpi_job_name"
LABEL_LEGACY_ROLE_TYPE: Final = "mpi_role_type"

# Condition types (status.conditions[*].type).
COND_CREATED: Final = "Created"
COND_RUNNING: Final = "Running"
COND_RESTARTING: Final = "Restarting"
COND_SUCCEEDED: Final = "Succeeded"
COND_SUSPENDED: Final = "Suspended"
COND_FAILED: Final = "Failed"

# Condition and event reasons.
REASON_CREATED: Final = "MPIJobCreated"
REASON_RUNNING: Final = "MPIJobRunning"
REASON_SUSPENDED: Final = "MPIJobSuspended"
REASON_RESUMED: Final = "MPIJobResumed"
REASON_SUCCEEDED: Final = "MPIJobSucceeded"
REASON_FAILED: Final = "MPIJobFailed"
REASON_EVICTED: Final = "MPIJobEvicted"
REASON_VALIDATION_ERROR: Final = "ValidationError"
REASON_RESOURCE_EXISTS: Final = "ErrResourceExists"
REASON_SET_POD_TEMPLATE_RESTART_POLICY: Final = "SetPodTemplateRestartPolicy"
REASON_BACKOFF_LIMIT_EXCEEDED: Final = "BackoffLimitExceeded"
