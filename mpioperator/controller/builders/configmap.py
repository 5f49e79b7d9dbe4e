"""The hostfile and discover_hosts.sh, byte for byte as upstream writes them (§2.6.2)."""

from __future__ import annotations

from collections.abc import Iterable

from mpioperator.api import accessors
from mpioperator.api import constants as api
from mpioperator.api.names import config_map_name, launcher_name, worker_name
from mpioperator.api.objects import Obj
from mpioperator.api.ownership import child_metadata

HOSTFILE = "hostfile"
DISCOVER_HOSTS = "discover_hosts.sh"


def fqdn(host: str, job: str, namespace: str, cluster_domain: str) -> str:
    name = f"{host}.{job}.{namespace}.svc"
    return f"{name}.{cluster_domain}" if cluster_domain else name


def hostfile(job: Obj, cluster_domain: str = "") -> str:
    name, ns = job["metadata"]["name"], job["metadata"].get("namespace", "")
    slots = accessors.slots_per_worker(job)
    hosts = [launcher_name(job)] if accessors.run_launcher_as_worker(job) else []
    hosts += [worker_name(job, i) for i in range(accessors.worker_replicas(job))]
    openmpi = accessors.mpi_implementation(job) == api.OPENMPI
    lines = []
    for host in hosts:
        address = fqdn(host, name, ns, cluster_domain)
        lines.append(f"{address} slots={slots}\n" if openmpi else f"{address}:{slots}\n")
    return "".join(lines)


def discover_hosts(job: Obj, running_workers: Iterable[Obj], cluster_domain: str = "") -> str:
    """Hosts Horovod elastic may use now: the launcher (if it works) and workers that are Running."""
    name, ns = job["metadata"]["name"], job["metadata"].get("namespace", "")
    script = "#!/bin/sh\n"
    if accessors.run_launcher_as_worker(job):
        script += f"echo {fqdn(launcher_name(job), name, ns, cluster_domain)}\n"
    pods = sorted(
        (p for p in running_workers if p.get("status", {}).get("phase") == "Running"),
        key=lambda p: str(p["metadata"]["name"]),
    )
    for pod in pods:
        host = fqdn(pod["metadata"]["name"], name, pod["metadata"].get("namespace", ns), cluster_domain)
        script += f"echo {host}\n"
    return script


def new_config_map(job: Obj, running_workers: Iterable[Obj], cluster_domain: str = "") -> Obj:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": child_metadata(job, config_map_name(job)),
        "data": {
            HOSTFILE: hostfile(job, cluster_domain),
            DISCOVER_HOSTS: discover_hosts(job, running_workers, cluster_domain),
        },
    }
