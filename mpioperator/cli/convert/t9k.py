"""T9k's MPIJob (`batch.tensorstack.dev/v1beta1`) as a `kubeflow.org/v2beta1` MPIJob (docs/migrating.md).

T9k's user manual writes the job as `spec.worker{replicas, cmd, extraMPIArgs, template}` beside `mca`,
`mpiHome`, `ssh`, `runPolicy.cleanUpWorkers`, `runMode` and `scheduler`; its API reference also has a newer
shape, `spec.mpiConfig{mca, home, extraArgs, script}` with `spec.replicaSpecs[{type, replicas,
restartPolicy{policy, limit}, template}]`. Both are read. T9k makes the launcher itself from the worker
template; here it is a template of its own, made from the worker's container.
"""

from __future__ import annotations

import itertools
import shlex
from typing import Any

from mpioperator.api import constants as api
from mpioperator.api.extensions import conveniences as ext
from mpioperator.api.objects import Obj, json_copy
from mpioperator.cli.convert.common import (
    Conversion,
    ConversionError,
    annotate,
    launcher_container,
    left_over,
    main_container_first,
    new_mpijob,
    opened,
    ssh_mount_path_note,
    words,
)

API_VERSION = "batch.tensorstack.dev/v1beta1"
WORKER_CONTAINER = "mpi-worker"
LAUNCHER_CONTAINER = "mpi-launcher"
# T9k names the launcher "launcher" in its status and "master" in runMode's replica types.
LAUNCHER_TYPES = ("launcher", "master")
# cleanUpWorkers is a boolean in one of T9k's API references and "all"/"unfinished"/"none" in the other.
CLEAN_UP = {
    True: api.CLEAN_POD_POLICY_ALL,
    "all": api.CLEAN_POD_POLICY_ALL,
    "unfinished": api.CLEAN_POD_POLICY_RUNNING,
    False: api.CLEAN_POD_POLICY_NONE,
    "none": api.CLEAN_POD_POLICY_NONE,
}
# Open MPI's "this many ranks on each host".
PER_NODE_FLAGS = ("-N", "-npernode", "--npernode")
_NEWER = (("mca", "mca"), ("home", "mpiHome"))
_NEWER_WORKER = (("extraArgs", "extraMPIArgs"), ("script", "cmd"))


def convert(source: Obj, ssh_auth_mount_path: str | None = None) -> Conversion:
    metadata, spec, done = opened(source)
    launcher_template, restart = _newer_shape(spec, done)
    annotations: dict[str, str] = {}
    run_policy: Obj = {}

    worker = spec.pop("worker", None) or {}
    template = worker.pop("template", None)
    if not isinstance(template, dict):
        raise ConversionError("spec.worker.template is required: the workers' pod template")
    cmd = worker.pop("cmd", None)
    if not cmd:
        raise ConversionError("spec.worker.cmd is required: the program mpirun starts on the workers")
    annotations[ext.LAUNCHER_PROGRAM] = words(cmd, "spec.worker.cmd")
    per_node = None
    if worker.get("extraMPIArgs"):
        extra = words(worker.pop("extraMPIArgs"), "spec.worker.extraMPIArgs")
        annotations[ext.MPIRUN_EXTRA_ARGS] = extra
        per_node = _ranks_per_node(shlex.split(extra), done)
    replicas = worker.pop("replicas", None)
    left_over(worker, "spec.worker", done)
    annotations.update(_mpi_settings(spec))

    ssh = spec.pop("ssh", None) or {}
    mount_path = ssh.pop("sshAuthMountPath", None)
    mount_path = ssh_auth_mount_path or mount_path
    sshd = ssh.pop("sshdPath", None)
    left_over(ssh, "spec.ssh", done)

    worker_template = json_copy(template)
    main = main_container_first(worker_template, WORKER_CONTAINER, "spec.worker.template", done)
    _worker_command(main, sshd, done)
    if launcher_template is None:
        launcher_template = json_copy(worker_template)
        launcher_template["spec"]["containers"][0] = launcher_container(
            main, LAUNCHER_CONTAINER, "spec.worker.template", done
        )

    _run_mode(spec, annotations, run_policy, done)
    clean_up = (spec.get("runPolicy") or {}).pop("cleanUpWorkers", None)
    if clean_up is not None:
        key = clean_up.lower() if isinstance(clean_up, str) else clean_up
        if key not in CLEAN_UP:
            raise ConversionError(f"spec.runPolicy.cleanUpWorkers: unknown value {clean_up!r}")
        run_policy["cleanPodPolicy"] = CLEAN_UP[key]
    left_over(spec.pop("runPolicy", None), "spec.runPolicy", done)
    _scheduler(spec, run_policy, done)

    launcher: Obj = {"replicas": 1, "template": launcher_template}
    worker_spec: Obj = {"replicas": 1 if replicas is None else replicas, "template": worker_template}
    _restart_policies(restart, launcher, worker_spec, run_policy, done)
    out: Obj = {} if per_node is None else {"slotsPerWorker": per_node}
    if run_policy:
        out["runPolicy"] = run_policy
    if mount_path:
        out["sshAuthMountPath"] = mount_path
    # T9k's launcher runs mpirun only once every worker is created and Ready.
    out["launcherCreationPolicy"] = api.WAIT_FOR_WORKERS_READY
    out["mpiReplicaSpecs"] = {api.LAUNCHER: launcher, api.WORKER: worker_spec}
    left_over(spec, "spec", done)
    annotate(metadata, annotations)
    done.job = new_mpijob(metadata, out)
    ssh_mount_path_note(done.job, done)
    return done


def _newer_shape(spec: Obj, done: Conversion) -> tuple[Obj | None, dict[str, Obj]]:
    """The newer shape rewritten as the manual's (in place); the launcher's own template, if it has one,
    and the restart policies by replica type."""
    config = spec.pop("mpiConfig", None)
    replica_specs = spec.pop("replicaSpecs", None)
    if config is None and replica_specs is None:
        return None, {}
    config = config or {}
    worker = spec.setdefault("worker", {})
    for old, new in _NEWER:
        if old in config:
            spec[new] = config.pop(old)
    for old, new in _NEWER_WORKER:
        if old in config:
            worker[new] = config.pop(old)
    left_over(config, "spec.mpiConfig", done)
    launcher_template = None
    restart: dict[str, Obj] = {}
    for index, entry in enumerate(replica_specs or []):
        kind = str(entry.pop("type", "")).lower()
        where = f"spec.replicaSpecs[{index}]"
        if kind == "worker":
            role = api.WORKER
            for key in ("replicas", "template"):
                if key in entry:
                    worker[key] = entry.pop(key)
        elif kind in LAUNCHER_TYPES:
            role = api.LAUNCHER
            launcher_template = entry.pop("template", None)
            entry.pop("replicas", None)  # one launcher, as T9k has
        else:
            raise ConversionError(f"{where}.type: unknown replica type {kind!r} (worker or launcher)")
        if entry.get("restartPolicy"):
            restart[role] = entry.pop("restartPolicy")
        left_over(entry, where, done)
    return launcher_template, restart


def _ranks_per_node(extra: list[str], done: Conversion) -> int | None:
    """The n of `-N n` (T9k's manual: three ranks on each worker): here that many slots per worker, so the
    hostfile gives each worker the slots `-N` asks for and the generated `-np` agrees with it."""
    for flag, value in itertools.pairwise(extra):
        if flag in PER_NODE_FLAGS and value.isdigit() and int(value) > 0:
            done.notes.append(
                f"{flag} {value} in extraMPIArgs: slotsPerWorker {value}, so each worker's hostfile line has "
                f"the slots it asks for (the generated line's -np is workers times {value})"
            )
            return int(value)
    return None


def _mpi_settings(spec: Obj) -> dict[str, str]:
    found: dict[str, str] = {}
    mca = spec.pop("mca", None)
    if mca:
        if not isinstance(mca, dict):
            raise ConversionError(f"spec.mca must be a map of MCA parameters, got {mca!r}")
        found[ext.MCA_PARAMS] = "".join(f"{key}={value}\n" for key, value in mca.items())
    home = spec.pop("mpiHome", None)
    if home:
        found[ext.MPI_HOME] = str(home)
    return found


def _worker_command(main: Obj, sshd: Any, done: Conversion) -> None:
    """T9k runs sshd in the worker container whatever its command says; here a worker runs its own
    command and args, or `/usr/sbin/sshd -De` when it has neither."""
    if main.get("command") or main.get("args"):
        done.notes.append(
            "the worker container's command/args, which T9k replaced by sshd, are kept: here the worker "
            "runs them, so they must start sshd" + (" (spec.ssh.sshdPath is not used)" if sshd else "")
        )
    elif sshd:
        main["command"] = [str(sshd), "-De"]


def _enabled(mode: Obj) -> bool:
    # `enable` in T9k's API reference, `enabled` in its user manual.
    enable, enabled = mode.pop("enable", False), mode.pop("enabled", False)
    return bool(enable or enabled)


def _run_mode(spec: Obj, annotations: dict[str, str], run_policy: Obj, done: Conversion) -> None:
    run_mode = spec.pop("runMode", None) or {}
    debug = run_mode.pop("debug", None) or {}
    if _enabled(debug):
        annotations[ext.DEBUG_MODE] = "true"
    _replica_settings(
        debug.pop("replicaSpecs", None), "spec.runMode.debug.replicaSpecs", _DEBUG_KEYS, annotations, done
    )
    left_over(debug, "spec.runMode.debug", done)
    pause = run_mode.pop("pause", None) or {}
    if _enabled(pause):
        run_policy["suspend"] = True
    _replica_settings(
        pause.pop("resumeSpecs", None), "spec.runMode.pause.resumeSpecs", _RESUME_KEYS, annotations, done
    )
    left_over(pause, "spec.runMode.pause", done)
    left_over(run_mode, "spec.runMode", done)


# Per replica type: the annotation of its command, and the one listing the types whose init containers
# are skipped.
_DEBUG_KEYS = (
    {api.LAUNCHER: ext.DEBUG_COMMAND, api.WORKER: ext.DEBUG_WORKER_COMMAND},
    ext.DEBUG_SKIP_INIT_CONTAINERS,
)
_RESUME_KEYS = (
    {api.LAUNCHER: ext.RESUME_LAUNCHER_COMMAND, api.WORKER: ext.RESUME_WORKER_COMMAND},
    ext.RESUME_SKIP_INIT_CONTAINERS,
)


def _replica_settings(
    entries: Any,
    where: str,
    keys: tuple[dict[str, str], str],
    annotations: dict[str, str],
    done: Conversion,
) -> None:
    """T9k's per-replica debug or resume settings (`type`, `command`, `args`, `skipInitContainer`) as
    the annotations that hold them here: a command and its args as one line of shell words."""
    commands, skip_key = keys
    skipped: list[str] = []
    for index, entry in enumerate(entries or []):
        kind = str(entry.pop("type", "")).lower()
        role = api.LAUNCHER if kind in LAUNCHER_TYPES else api.WORKER if kind == "worker" else None
        here = f"{where}[{index}]"
        if role is None:
            raise ConversionError(f"{here}.type: unknown replica type {kind!r} (worker or launcher)")
        command = [*(entry.pop("command", None) or []), *(entry.pop("args", None) or [])]
        if command:
            annotations[commands[role]] = words(command, f"{here}.command")
        if entry.pop("skipInitContainer", False):
            skipped.append(role)
        left_over(entry, here, done)
    if skipped:
        annotations[skip_key] = ",".join(dict.fromkeys(skipped))


def _scheduler(spec: Obj, run_policy: Obj, done: Conversion) -> None:
    scheduler = spec.pop("scheduler", None) or {}
    t9k = scheduler.pop("t9kScheduler", None) or {}
    if t9k.get("queue"):
        run_policy["schedulingPolicy"] = {"queue": str(t9k.pop("queue"))}
        done.notes.append(
            "runPolicy.schedulingPolicy.queue is read by gang scheduling: run the operator with "
            "--gang-scheduling=volcano (or use Kueue's kueue.x-k8s.io/queue-name label)"
        )
    if t9k.get("priority") is not None:
        done.warnings.append(
            f"spec.scheduler.t9kScheduler.priority is not converted: {t9k.pop('priority')!r}; here a "
            "priority is a PriorityClass name, runPolicy.schedulingPolicy.priorityClass"
        )
    left_over(t9k, "spec.scheduler.t9kScheduler", done)
    left_over(scheduler, "spec.scheduler", done)


def _restart_policies(
    restart: dict[str, Obj], launcher: Obj, worker: Obj, run_policy: Obj, done: Conversion
) -> None:
    for role, replica in ((api.LAUNCHER, launcher), (api.WORKER, worker)):
        found = restart.get(role)
        if not found:
            continue
        where = f"restartPolicy of the {role.lower()}"
        policy = found.pop("policy", None)
        if policy in api.RESTART_POLICIES:
            replica["restartPolicy"] = policy
        elif policy is not None:
            done.warnings.append(
                f"{where}: policy {policy!r} is not converted (one of {api.RESTART_POLICIES})"
            )
        limit = found.pop("limit", None)
        if limit is not None and role == api.LAUNCHER:
            run_policy["backoffLimit"] = limit
        elif limit is not None:
            done.warnings.append(
                f"{where}: limit {limit!r} is not converted; a worker is not restarted on its own here "
                "(mpioperator.io/restart-policy and max-restarts restart the whole job)"
            )
        left_over(found, where, done)
