"""FFFFFaraway's MPIJob (`batch.test.bdap.com/v1`) as a `kubeflow.org/v2beta1` MPIJob (docs/migrating.md).

Its spec is `numWorkers`, `launcherTemplate` and `workerTemplate`. What its operator did without being
asked is written out: the launcher created once every worker is Ready, one slot per worker (its hostfile's
fixed `slots=1`), workers re-created when their template changes (its StatefulSet's rolling update).
"""

from __future__ import annotations

from mpioperator.api import constants as api
from mpioperator.api.extensions import conveniences as ext
from mpioperator.api.objects import Obj, json_copy
from mpioperator.cli.convert.common import (
    Conversion,
    ConversionError,
    annotate,
    containers,
    left_over,
    new_mpijob,
    opened,
    runs_sshd,
    ssh_mount_path_note,
)

API_VERSION = "batch.test.bdap.com/v1"
# Its gang scheduler's label, naming a ConfigMap with minAvailable and scheduleTimeoutSeconds.
GANG_LABEL = "pod-group.scheduling.bdap.com/podgroup-configmap"


def convert(source: Obj, ssh_auth_mount_path: str | None = None) -> Conversion:
    metadata, spec, done = opened(source)
    workers = spec.pop("numWorkers", None)
    if workers is None:
        raise ConversionError("spec.numWorkers is required (FFFFFaraway's operator does nothing without it)")
    launcher = _replica(1, spec.pop("launcherTemplate", None), "spec.launcherTemplate", done)
    worker = _replica(workers, spec.pop("workerTemplate", None), "spec.workerTemplate", done)
    _worker_notes(worker["template"], done)
    left_over(spec, "spec", done)

    annotate(metadata, {ext.ROLL_WORKERS: "true"})
    done.notes.append(
        f"{ext.ROLL_WORKERS}: the workers are re-created when their template changes, as the StatefulSet "
        "did, but only before the launcher starts (docs/extensions.md)"
    )
    out: Obj = {"slotsPerWorker": 1}
    if ssh_auth_mount_path:
        out["sshAuthMountPath"] = ssh_auth_mount_path
    out["launcherCreationPolicy"] = api.WAIT_FOR_WORKERS_READY
    out["mpiReplicaSpecs"] = {api.LAUNCHER: launcher, api.WORKER: worker}
    done.job = new_mpijob(metadata, out)
    ssh_mount_path_note(done.job, done)
    return done


def _replica(replicas: object, template: object, where: str, done: Conversion) -> Obj:
    """A replica spec for the template; the template's restartPolicy becomes the replica's, where
    upstream's operator reads it (it replaces the template's own)."""
    if not isinstance(template, dict) or not containers(template):
        raise ConversionError(f"{where} is required: a pod template with a container")
    template = json_copy(template)
    replica: Obj = {"replicas": replicas}
    policy = (template.get("spec") or {}).pop("restartPolicy", None)
    if policy is not None:
        replica["restartPolicy"] = policy
        done.notes.append(
            f"{where}.spec.restartPolicy {policy} is the replica's restartPolicy here (upstream's operator "
            "reads that one and replaces the template's)"
        )
    replica["template"] = template
    return replica


def _worker_notes(template: Obj, done: Conversion) -> None:
    main = containers(template)[0]
    if not runs_sshd(main):
        done.warnings.append(
            "the launcher reaches the workers over SSH here, not through kubectl exec: the worker's "
            "command must start sshd (a worker without command and args runs /usr/sbin/sshd -De)"
        )
    labels = (template.get("metadata") or {}).get("labels") or {}
    if GANG_LABEL in labels or (template.get("spec") or {}).get("schedulerName") == "gang-scheduler":
        done.warnings.append(
            f"the worker template's gang-scheduler settings ({GANG_LABEL}, schedulerName) are kept but "
            "mean nothing here: use runPolicy.schedulingPolicy{minAvailable, scheduleTimeoutSeconds} "
            "with the operator's --gang-scheduling"
        )
