"""What converting any other operator's MPIJob needs: the notes for stderr, the source's metadata, the
fields left over once a converter has taken what it maps, and the pod template helpers.

Converters work on a copy of the source and pop every field they map, so whatever is still in it at the end
was not mapped and is named in a warning: nothing is dropped without a word.
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass, field
from typing import Any

from mpioperator.api import constants as api
from mpioperator.api.objects import Obj, json_copy
from mpioperator.client.errors import MPIJobError

# Metadata the API server writes; a manifest read back with `kubectl get -o yaml` carries it.
SERVER_METADATA = (
    "uid",
    "resourceVersion",
    "generation",
    "creationTimestamp",
    "deletionTimestamp",
    "deletionGracePeriodSeconds",
    "managedFields",
    "selfLink",
    "ownerReferences",
    "finalizers",
)
LAST_APPLIED = "kubectl.kubernetes.io/last-applied-configuration"
KEPT_METADATA = ("name", "generateName", "namespace", "labels", "annotations")
# The resources a launcher needs; the rest (GPUs and other devices) are for the workers' ranks.
LAUNCHER_RESOURCES = ("cpu", "memory", "ephemeral-storage")
PROBES = ("readinessProbe", "livenessProbe", "startupProbe")


class ConversionError(MPIJobError):
    """A manifest that cannot be converted at all."""


@dataclass
class Conversion:
    """The converted MPIJob and what the user must know about it: `warnings` name what was not mapped,
    `notes` say where a mapping differs from the source operator's behaviour."""

    job: Obj
    warnings: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


def words(value: Any, where: str) -> str:
    """A list of words (T9k's cmd, extraMPIArgs) as one shell-quoted string for an annotation."""
    if isinstance(value, str):
        return value
    if not isinstance(value, list) or not all(isinstance(w, (str, int, float)) for w in value):
        raise ConversionError(f"{where} must be a list of strings, got {value!r}")
    return shlex.join(str(w) for w in value)


def take_metadata(source: Obj, done: Conversion) -> Obj:
    """The source's name, namespace, labels and annotations; what the API server wrote is left out."""
    meta = source.pop("metadata", None) or {}
    if not isinstance(meta, dict) or not meta.get("name"):
        raise ConversionError("metadata.name is required")
    kept = {key: meta.pop(key) for key in KEPT_METADATA if meta.get(key) not in (None, {}, "")}
    server = [key for key in SERVER_METADATA if meta.pop(key, None) is not None]
    annotations = kept.get("annotations")
    if isinstance(annotations, dict) and annotations.pop(LAST_APPLIED, None) is not None:
        server.append(f"annotations[{LAST_APPLIED}]")
    if server:
        done.notes.append(f"left out metadata the API server writes: {', '.join(server)}")
    left_over(meta, "metadata", done)
    if source.pop("status", None):
        done.notes.append("left out status: the operator writes its own")
    return kept


def opened(source: Obj) -> tuple[Obj, Obj, Conversion]:
    """A copy of the source manifest taken apart: its metadata, its spec (both popped, so what is left of
    each is what was not converted) and the conversion to fill; anything beside them is named at once."""
    doc = json_copy(source)
    doc.pop("apiVersion", None)
    doc.pop("kind", None)
    done = Conversion(job={})
    metadata = take_metadata(doc, done)
    spec = doc.pop("spec", None) or {}
    left_over(doc, "", done)
    return metadata, spec, done


def left_over(obj: Any, where: str, done: Conversion) -> None:
    """A warning for every field still in `obj`: one the converter did not map."""
    if isinstance(obj, dict):
        for key, value in obj.items():
            if value not in (None, {}, [], ""):
                path = f"{where}.{key}" if where else key
                done.warnings.append(f"{path} is not converted (no equivalent here): {value!r}")


def new_mpijob(metadata: Obj, spec: Obj) -> Obj:
    return {"apiVersion": api.API_VERSION, "kind": api.KIND, "metadata": metadata, "spec": spec}


def annotate(metadata: Obj, values: dict[str, str]) -> None:
    if values:
        metadata["annotations"] = {**(metadata.get("annotations") or {}), **values}


def containers(template: Obj) -> list[Obj]:
    found = (template.get("spec") or {}).get("containers")
    return [c for c in found if isinstance(c, dict)] if isinstance(found, list) else []


def main_container_first(template: Obj, name: str, where: str, done: Conversion) -> Obj:
    """The container called `name` moved to the front (upstream's operator takes the first container as
    the one to run and mount into); the first container when there is none of that name."""
    found = containers(template)
    if not found:
        raise ConversionError(f"{where}.spec.containers is empty: the pods need a container")
    named = [c for c in found if c.get("name") == name]
    if not named:
        done.notes.append(f"{where} has no container named {name}: its first container is the main one")
        return found[0]
    if found[0] is not named[0]:
        template["spec"]["containers"] = [named[0], *(c for c in found if c is not named[0])]
    return named[0]


def launcher_container(worker: Obj, name: str, where: str, done: Conversion) -> Obj:
    """A launcher container made from a worker's: no command (the launcher runs mpirun), no probes (it
    serves nothing) and no devices (the ranks run on the workers)."""
    launcher = {k: json_copy(v) for k, v in worker.items() if k not in ("command", "args", *PROBES)}
    launcher["name"] = name
    resources = launcher.get("resources")
    if isinstance(resources, dict):
        kept: Obj = {}
        for kind in ("limits", "requests"):
            amounts = resources.get(kind)
            if not isinstance(amounts, dict):
                continue
            devices = sorted(k for k in amounts if k not in LAUNCHER_RESOURCES)
            if devices:
                done.notes.append(
                    f"{where}: the launcher does not get the workers' {kind} of {', '.join(devices)}"
                )
            kept[kind] = {k: v for k, v in amounts.items() if k in LAUNCHER_RESOURCES}
        launcher["resources"] = {k: v for k, v in kept.items() if v}
        if not launcher["resources"]:
            del launcher["resources"]
    return launcher


def runs_sshd(container: Obj) -> bool:
    line = [*(container.get("command") or ()), *(container.get("args") or ())]
    return not line or any(str(word).rsplit("/", 1)[-1] == "sshd" for word in line[:4])


def non_root_without_mount_path(job: Obj) -> bool:
    """Containers running as a user other than root while the SSH keys go to root's home."""
    if job["spec"].get("sshAuthMountPath"):
        return False
    for replica in job["spec"]["mpiReplicaSpecs"].values():
        pod = (replica.get("template") or {}).get("spec") or {}
        users = [(pod.get("securityContext") or {}).get("runAsUser")]
        users += [(c.get("securityContext") or {}).get("runAsUser") for c in containers(replica["template"])]
        if any(user not in (None, 0) for user in users):
            return True
    return False


def ssh_mount_path_note(job: Obj, done: Conversion) -> None:
    if non_root_without_mount_path(job):
        done.warnings.append(
            f"the containers run as a user other than root, but the SSH keys go to "
            f"{api.DEFAULT_SSH_AUTH_MOUNT_PATH}: give that user's ~/.ssh with --ssh-auth-mount-path"
        )
