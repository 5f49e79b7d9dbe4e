"""The hostfile and discover_hosts.sh, byte for byte as upstream writes them, and how many
workers a job may have for the ConfigMap holding them to stay within what the API server stores."""

from __future__ import annotations

import functools
from collections.abc import Callable, Hashable, Iterable, Mapping
from dataclasses import dataclass

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


# Worker name -> the address the hostfile gives it, for a job whose hostfile lists pod IPs: only the
# workers that have one. None (the default, upstream's format) names every worker by its DNS name.
Addresses = Mapping[str, str]


def hostfile(job: Obj, cluster_domain: str = "", addresses: Addresses | None = None) -> str:
    name, ns = job["metadata"]["name"], job["metadata"].get("namespace", "")
    slots = accessors.slots_per_worker(job)
    openmpi = accessors.mpi_implementation(job) == api.OPENMPI
    # The launcher resolves its own name from its /etc/hosts, so it keeps it even in a hostfile of IPs.
    listed = (
        [fqdn(launcher_name(job), name, ns, cluster_domain)] if accessors.run_launcher_as_worker(job) else []
    )
    workers = (worker_name(job, i) for i in range(accessors.worker_replicas(job)))
    if addresses is None:
        listed += [fqdn(host, name, ns, cluster_domain) for host in workers]
    else:
        listed += [addresses[host] for host in workers if host in addresses]
    return "".join(f"{address} slots={slots}\n" if openmpi else f"{address}:{slots}\n" for address in listed)


def discover_hosts(
    job: Obj, running_workers: Iterable[Obj], cluster_domain: str = "", addresses: Addresses | None = None
) -> str:
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
        pod_name = str(pod["metadata"]["name"])
        if addresses is None:
            script += f"echo {fqdn(pod_name, name, pod['metadata'].get('namespace', ns), cluster_domain)}\n"
        elif pod_name in addresses:
            script += f"echo {addresses[pod_name]}\n"
    return script


def data_inputs(job: Obj, running_workers: Iterable[Obj], addresses: Addresses | None = None) -> Hashable:
    """Everything the ConfigMap's data depend on besides the cluster domain, for workers in the job's
    namespace (as the pod cache is asked for them): equal inputs, equal data."""
    meta = job["metadata"]
    return (
        None if addresses is None else frozenset(addresses.items()),
        meta["name"],
        meta.get("namespace", ""),
        accessors.slots_per_worker(job),
        accessors.run_launcher_as_worker(job),
        accessors.worker_replicas(job),
        accessors.mpi_implementation(job) == api.OPENMPI,
        frozenset(
            p["metadata"]["name"] for p in running_workers if p.get("status", {}).get("phase") == "Running"
        ),
    )


def new_config_map(
    job: Obj, running_workers: Iterable[Obj], cluster_domain: str = "", addresses: Addresses | None = None
) -> Obj:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": child_metadata(job, config_map_name(job)),
        "data": {
            HOSTFILE: hostfile(job, cluster_domain, addresses),
            DISCOVER_HOSTS: discover_hosts(job, running_workers, cluster_domain, addresses),
        },
    }


# The API server refuses a ConfigMap whose values add up to more than 1 MiB (core validation's
# MaxSecretSize; the keys are not counted).
DATA_LIMIT = 1024 * 1024
_LABEL = 63  # a worker hostname is a DNS-1035 label, a namespace a DNS-1123 label
_WORKER_INFIX = len("-worker-")
_LAUNCHER_SUFFIX = len("-launcher")
_INT32_DIGITS = len(str(2**31 - 1))  # slotsPerWorker is an int32


@dataclass(frozen=True, slots=True)
class Shape:
    """What a job's ConfigMap size depends on besides its worker count, as lengths."""

    name: int
    namespace: int
    domain: int  # the cluster domain's length; 0 for none
    slots: int  # digits of slotsPerWorker
    openmpi: bool  # `host slots=N` lines; Intel MPI and MPICH write `host:N`
    launcher_as_worker: bool


def _index_digits(workers: int) -> int:
    """The digits of every worker index 0..workers-1 together."""
    total, digits, low = 0, 1, 0
    while low < workers:
        high = min(workers, 10**digits)
        total += (high - low) * digits
        low, digits = high, digits + 1
    return total


def data_size(workers: int, shape: Shape) -> int:
    """Bytes of the ConfigMap's values with every worker Running, as `new_config_map` writes them."""
    suffix = len(".") + shape.name + len(".") + shape.namespace + len(".svc")
    suffix += len(".") + shape.domain if shape.domain else 0
    slots = len(" slots=") + shape.slots if shape.openmpi else len(":") + shape.slots
    # Each host is a hostfile line (`<fqdn><slots>\n`) and a discover_hosts.sh line (`echo <fqdn>\n`).
    per_host = 2 * suffix + slots + len("\n") + len("echo ") + len("\n")
    hosts = workers + (1 if shape.launcher_as_worker else 0)
    host_names = workers * (shape.name + _WORKER_INFIX) + _index_digits(workers)
    host_names += shape.name + _LAUNCHER_SUFFIX if shape.launcher_as_worker else 0
    return len("#!/bin/sh\n") + 2 * host_names + hosts * per_host


def largest_shape(workers: int, cluster_domain: str) -> Shape:
    """The largest ConfigMap a job of `workers` workers can have: the longest name its last worker's
    hostname leaves, the longest namespace, an int32's digits of slots, Open MPI's lines, the launcher
    among the hosts."""
    name = _LABEL - _WORKER_INFIX - len(str(max(workers - 1, 0)))
    return Shape(name, _LABEL, len(cluster_domain), _INT32_DIGITS, True, True)


def smallest_shape(workers: int) -> Shape:
    """The smallest ConfigMap a job of `workers` workers can have: one-letter name and namespace, no
    cluster domain, one digit of slots, `host:N` lines."""
    return Shape(1, 1, 0, 1, False, False)


def _largest_that_fits(shape_of: Callable[[int], Shape]) -> int:
    """The largest worker count such that every count up to it fits.

    Counts whose last index has as many digits share a shape, and within such a run the size grows
    with the count, so each run is searched by bisection; a longer index can shorten the longest name,
    so the runs are taken in order up to the first that does not fit whole."""

    def fits(workers: int) -> bool:
        return data_size(workers, shape_of(workers)) <= DATA_LIMIT

    first, last = 1, 10  # the counts whose last index has one digit
    while fits(last):
        first, last = last + 1, last * 10
    if not fits(first):
        return first - 1
    fitting, too_many = first, last
    while too_many - fitting > 1:
        middle = (fitting + too_many) // 2
        fitting, too_many = (middle, too_many) if fits(middle) else (fitting, middle)
    return fitting


@functools.cache
def max_worker_replicas(cluster_domain: str = "") -> int:
    """The most workers for which any job's ConfigMap fits, whatever its names, slots and MPI: the
    default of --max-worker-replicas."""
    return _largest_that_fits(lambda workers: largest_shape(workers, cluster_domain))


@functools.cache
def worker_replicas_ceiling() -> int:
    """The most workers for which some job's ConfigMap fits: above it none can ever run. The CRD's
    maximum, and the highest --max-worker-replicas accepts."""
    return _largest_that_fits(smallest_shape)
