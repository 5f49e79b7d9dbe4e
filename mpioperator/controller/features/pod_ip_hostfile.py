"""The hostfile of pod IPs (`mpioperator.io/hostfile-addresses: ip`, docs/extensions.md).

Upstream's hostfile names each worker by its DNS name under the job's headless Service. A rank's first
connection then waits for that name to resolve, which for a new pod can take tens of seconds, and at
thousands of workers the names alone outgrow the 1 MiB a ConfigMap holds. With this annotation the
hostfile and discover_hosts.sh list the workers' pod IPs instead, and the launcher Job is made only once
the ConfigMap the cache holds lists every worker's IP: the launcher's pod mounts the ConfigMap as it is
when the pod starts, and the kubelet refreshes a mounted ConfigMap only about once a minute.
"""

from __future__ import annotations

from collections.abc import Mapping

from mpioperator.api import accessors, names
from mpioperator.api import constants as api
from mpioperator.api.extensions import launch
from mpioperator.api.extensions.parsed import Extensions
from mpioperator.api.field_errors import FieldError, invalid
from mpioperator.api.objects import Obj
from mpioperator.controller.builders.configmap import DATA_LIMIT, HOSTFILE, Shape, data_size
from mpioperator.controller.feature import Feature, FeaturePorts


def pod_ips(workers: list[Obj]) -> dict[str, str]:
    """Each worker pod's IP, for the pods that have one and are not being deleted."""
    found = {}
    for pod in workers:
        ip = (pod.get("status") or {}).get("podIP")
        if ip and not pod["metadata"].get("deletionTimestamp"):
            found[str(pod["metadata"]["name"])] = str(ip)
    return found


def listed_addresses(hostfile: str, openmpi: bool) -> set[str]:
    """The addresses a hostfile lists, in either format (`ADDRESS slots=N` or `ADDRESS:N`)."""
    listed = set()
    for line in hostfile.splitlines():
        if not line.strip():
            continue
        listed.add(line.split(" ", 1)[0] if openmpi else line.rsplit(":", 1)[0])
    return listed


def dns_hostfile_bytes(job: Obj, cluster_domain: str) -> int:
    """The size of the job's ConfigMap in upstream's format once every worker is Running."""
    meta = job["metadata"]
    shape = Shape(
        name=len(str(meta["name"])),
        namespace=len(str(meta.get("namespace", ""))),
        domain=len(cluster_domain),
        slots=len(str(accessors.slots_per_worker(job))),
        openmpi=accessors.mpi_implementation(job) == api.OPENMPI,
        launcher_as_worker=accessors.run_launcher_as_worker(job),
    )
    return data_size(accessors.worker_replicas(job), shape)


class PodIPHostfileFeature(Feature):
    def __init__(self, ports: FeaturePorts) -> None:
        self._l = ports.listers
        self._domain = ports.cluster_domain

    def validate(self, job: Obj, ext: Extensions) -> list[FieldError]:
        """A job whose DNS-name hostfile cannot fit a ConfigMap is told so, and how to run it, up front:
        otherwise the API server refuses the ConfigMap and the job waits with its refusal."""
        if ext.launch.ip_hostfile:
            return []
        size = dns_hostfile_bytes(job, self._domain)
        if size <= DATA_LIMIT:
            return []
        workers = accessors.worker_replicas(job)
        detail = (
            f"the hostfile and discover_hosts.sh of {workers} workers named under this job's name and "
            f"namespace take {size} bytes, more than the {DATA_LIMIT} a ConfigMap holds: list the workers "
            f"by pod IP (annotation {launch.HOSTFILE_ADDRESSES}: ip), or shorten the names"
        )
        return [invalid(f"spec.mpiReplicaSpecs[{api.WORKER}].replicas", workers, detail)]

    def hostfile_addresses(self, job: Obj, ext: Extensions, workers: list[Obj]) -> Mapping[str, str] | None:
        return pod_ips(workers) if ext.launch.ip_hostfile else None

    async def after_workers(
        self, job: Obj, ext: Extensions, launcher: Obj | None, workers: list[Obj]
    ) -> tuple[bool, Obj | None]:
        """The launcher waits until every worker has an IP and the cached ConfigMap lists them all."""
        if launcher is not None or not ext.launch.ip_hostfile:
            return False, launcher
        ips = pod_ips(workers)
        if len(ips) < accessors.worker_replicas(job):
            return True, launcher
        config_map = self._l.config_maps.get(job["metadata"]["namespace"], names.config_map_name(job))
        hostfile = str(((config_map or {}).get("data") or {}).get(HOSTFILE, ""))
        openmpi = accessors.mpi_implementation(job) == api.OPENMPI
        return not set(ips.values()) <= listed_addresses(hostfile, openmpi), launcher
