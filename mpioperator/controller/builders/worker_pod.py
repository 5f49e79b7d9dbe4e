"""Worker pods: bare Pods named `<job>-worker-<i>`, running sshd unless told otherwise."""

from __future__ import annotations

from collections.abc import Sequence

from mpioperator.api import accessors
from mpioperator.api import constants as api
from mpioperator.api.names import worker_name
from mpioperator.api.objects import Obj, json_copy
from mpioperator.api.ownership import controller_ref
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

SSHD_COMMAND = ["/usr/sbin/sshd", "-De"]


def new_worker(
    job: Obj, index: int, decorators: Sequence[Decorator] = (), ssh_keys: SSHKeys = UPSTREAM_KEYS
) -> Obj:
    """Worker `index`'s pod; `decorators` (ours, then gang scheduling's) change it in turn."""
    replica = job["spec"]["mpiReplicaSpecs"][api.WORKER]
    template = json_copy(replica.get("template") or {})
    source_meta = template.get("metadata") or {}
    name = worker_name(job, index)
    labels = dict(source_meta.get("labels") or {})
    labels.update(role_labels(job, api.ROLE_WORKER))
    offset = 1 if accessors.run_launcher_as_worker(job) else 0
    labels[api.LABEL_REPLICA_INDEX] = str(index + offset)
    metadata: Obj = {
        "name": name,
        "namespace": job["metadata"].get("namespace", ""),
        "labels": labels,
        "ownerReferences": [controller_ref(job)],
    }
    if source_meta.get("annotations"):
        metadata["annotations"] = dict(source_meta["annotations"])
    spec = template.get("spec") or {}
    set_host(spec, name, job)
    dns = dict(spec.get("dnsConfig") or {})
    dns["searches"] = [
        *(dns.get("searches") or []),
        f"{job['metadata']['name']}.{job['metadata'].get('namespace', '')}.svc.cluster.local",
    ]
    spec["dnsConfig"] = dns
    spec["restartPolicy"] = pod_restart_policy(replica.get("restartPolicy"))
    container = spec["containers"][0]
    if not container.get("command") and not container.get("args"):
        container["command"] = list(SSHD_COMMAND)
    add_env(container, ("K_MPI_JOB_ROLE", "worker"))
    add_volume(spec, container, ssh_volume(job, ssh_keys), accessors.ssh_auth_mount_path(job))
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": metadata, "spec": spec}
    for decorate in decorators:
        decorate(pod)
    return pod
