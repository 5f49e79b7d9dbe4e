"""The launcher batch/v1 Job and its pod template, and the resume-time directive merge."""

from __future__ import annotations

from collections.abc import Sequence

from mpioperator.api import accessors
from mpioperator.api import constants as api
from mpioperator.api.names import config_map_name, launcher_name
from mpioperator.api.objects import Obj, json_copy
from mpioperator.api.ownership import child_metadata, controller_ref
from mpioperator.controller.builders.podspec import (
    UPSTREAM_KEYS,
    Decorator,
    SSHKeys,
    add_env,
    add_volume,
    pod_restart_policy,
    role_labels,
    set_host,
    ssh_volume,
)

CONFIG_VOLUME = "mpi-job-config"
CONFIG_MOUNT = "/etc/mpi"
HOSTFILE_PATH = "/etc/mpi/hostfile"
SSH_RETRY_ARGS = "-o ConnectionAttempts=10"


def implementation_env(job: Obj) -> list[tuple[str, str | None]]:
    slots = str(accessors.slots_per_worker(job))
    implementation = accessors.mpi_implementation(job)
    if implementation == api.INTEL:
        return [
            ("I_MPI_HYDRA_HOST_FILE", HOSTFILE_PATH),
            ("I_MPI_HYDRA_BOOTSTRAP_EXEC_EXTRA_ARGS", SSH_RETRY_ARGS),
            ("I_MPI_PERHOST", slots),
        ]
    if implementation == api.MPICH:
        return [("HYDRA_HOST_FILE", HOSTFILE_PATH), ("HYDRA_LAUNCH_EXTRA_ARGS", SSH_RETRY_ARGS)]
    return [
        ("OMPI_MCA_orte_keep_fqdn_hostnames", "true"),
        ("OMPI_MCA_orte_default_hostfile", HOSTFILE_PATH),
        ("OMPI_MCA_plm_rsh_args", SSH_RETRY_ARGS),
        ("OMPI_MCA_orte_set_default_slots", slots),
        *prrte_env(slots),
    ]


def prrte_env(slots: str) -> list[tuple[str, str | None]]:
    """Open MPI 5's launcher (PRRTE) reads none of the OMPI_MCA_orte_* names above and, without these,
    runs every rank on the launcher and exits 0. Open MPI 4 ignores PRTE_MCA_*, and an image does not say
    which of the two it holds, so every Open MPI launcher gets both families."""
    return [
        # Unlike ORTE, PRRTE ssh-es to the name as the hostfile writes it either way; it only compares the
        # first label with its own hostname to tell its own entry. Kept whole, the launcher's entry under
        # runLauncherAsWorker (`pi-launcher.pi.ns.svc`) never equals `pi-launcher`, and mpirun ssh-es to
        # its own pod, which runs no sshd.
        ("PRTE_MCA_prte_keep_fqdn_hostnames", "false"),
        ("PRTE_MCA_prte_default_hostfile", HOSTFILE_PATH),
        ("PRTE_MCA_plm_ssh_args", SSH_RETRY_ARGS),
        ("PRTE_MCA_prte_set_default_slots", slots),
        # PRRTE cuts the ssh args it forwards to its daemons at '=' ("-o ConnectionAttempts"), which
        # breaks the daemons' own ssh in a tree spawn (jobs past 64 hosts); the launcher reaching every
        # host itself never uses that copy.
        ("PRTE_MCA_plm_ssh_no_tree_spawn", "1"),
    ]


def _unless_set_by_user(container: Obj, pairs: list[tuple[str, str | None]]) -> list[tuple[str, str | None]]:
    # Ours, not upstream's: a variable the user's template already sets keeps the user's value. (Upstream's
    # own variables are appended after the user's, and the kubelet lets the last of a name win.)
    theirs = {entry.get("name") for entry in container.get("env") or ()}
    ours = {name for name, _ in prrte_env("")}
    return [(name, value) for name, value in pairs if name not in ours or name not in theirs]


def launcher_pod_template(
    job: Obj, decorators: Sequence[Decorator] = (), ssh_keys: SSHKeys = UPSTREAM_KEYS
) -> tuple[Obj, bool]:
    """The launcher's pod template, and whether the user's template restartPolicy was overridden;
    `decorators` (ours, then gang scheduling's) change the template in turn before the replica index."""
    replica = job["spec"]["mpiReplicaSpecs"][api.LAUNCHER]
    template = json_copy(replica.get("template") or {})
    source_meta = template.get("metadata") or {}
    labels = dict(source_meta.get("labels") or {})
    labels.update(role_labels(job, api.ROLE_LAUNCHER))
    metadata: Obj = {"labels": labels}
    if source_meta.get("annotations"):
        metadata["annotations"] = dict(source_meta["annotations"])
    metadata["ownerReferences"] = [controller_ref(job)]
    spec = template.get("spec") or {}
    set_host(spec, launcher_name(job), job)
    launcher_as_worker = accessors.run_launcher_as_worker(job)
    container = spec["containers"][0]
    env: list[tuple[str, str | None]] = [
        ("K_MPI_JOB_ROLE", "launcher"),
        *_unless_set_by_user(container, implementation_env(job)),
    ]
    if not launcher_as_worker:
        # Present with no value: keeps the NVIDIA runtime from handing the launcher any GPU.
        env += [("NVIDIA_VISIBLE_DEVICES", None), ("NVIDIA_DRIVER_CAPABILITIES", None)]
    add_env(container, *env)
    # Ours: a launcher that fails with nothing in its termination file leaves the tail of its log there,
    # which the MPIJob's Failed condition quotes (docs/extensions.md). A user's own choice stands.
    container.setdefault("terminationMessagePolicy", "FallbackToLogsOnError")
    add_volume(spec, container, ssh_volume(job, ssh_keys), accessors.ssh_auth_mount_path(job))
    overridden = bool(spec.get("restartPolicy"))
    spec["restartPolicy"] = pod_restart_policy(
        replica.get("restartPolicy") or api.DEFAULT_LAUNCHER_RESTART_POLICY
    )
    config_volume = {
        "name": CONFIG_VOLUME,
        "configMap": {
            "name": config_map_name(job),
            "items": [
                {"key": "hostfile", "path": "hostfile", "mode": 0o444},
                {"key": "discover_hosts.sh", "path": "discover_hosts.sh", "mode": 0o555},
            ],
        },
    }
    add_volume(spec, container, config_volume, CONFIG_MOUNT)
    pod_template: Obj = {"metadata": metadata, "spec": spec}
    for decorate in decorators:
        decorate(pod_template)
    if launcher_as_worker:
        metadata["labels"][api.LABEL_REPLICA_INDEX] = "0"
    return pod_template, overridden


def new_launcher_job(
    job: Obj,
    decorators: Sequence[Decorator] = (),
    ssh_keys: SSHKeys = UPSTREAM_KEYS,
    job_decorators: Sequence[Decorator] = (),
) -> tuple[Obj, bool]:
    """The launcher Job; `decorators` change its pod template, `job_decorators` the Job itself."""
    template, overridden = launcher_pod_template(job, decorators, ssh_keys)
    run_policy = accessors.run_policy(job)
    spec: Obj = {}
    for ours, theirs in (
        ("ttlSecondsAfterFinished", "ttlSecondsAfterFinished"),
        ("activeDeadlineSeconds", "activeDeadlineSeconds"),
        ("backoffLimit", "backoffLimit"),
    ):
        if run_policy.get(ours) is not None:
            spec[theirs] = run_policy[ours]
    spec["podReplacementPolicy"] = "Failed"
    if run_policy.get("suspend"):
        spec["suspend"] = True
    spec["template"] = template
    metadata = child_metadata(job, launcher_name(job))
    body = {"apiVersion": "batch/v1", "kind": "Job", "metadata": metadata, "spec": spec}
    for decorate in job_decorators:
        decorate(body)
    return body, overridden


def merge_scheduling_directives(existing: Obj, desired: Obj) -> None:
    """Resume-time sync (Kueue's mutable directives): labels and annotations merged with the desired
    winning, never removed; nodeSelector, tolerations and schedulingGates replaced."""
    meta = existing.setdefault("metadata", {})
    want_meta = desired.get("metadata") or {}
    for key in ("labels", "annotations"):
        merged = dict(meta.get(key) or {})
        merged.update(want_meta.get(key) or {})
        if merged:
            meta[key] = merged
    spec = existing.setdefault("spec", {})
    want_spec = desired.get("spec") or {}
    for key in ("nodeSelector", "tolerations", "schedulingGates"):
        if want_spec.get(key) is None:
            spec.pop(key, None)
        else:
            spec[key] = json_copy(want_spec[key])
