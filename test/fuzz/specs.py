"""Random valid MPIJobs: names, pod templates, replica specs, run policies, gang scheduling, sizes.

"Valid" means valid for the real API server too: the CRD accepts the MPIJob and the Pod, Job, Service,
ConfigMap, Secret and PodGroup validation accepts every child the operator builds from it (the integration
fuzz test proves it by server-side dry-run). Fields the API server would check against other objects are
kept to objects the test provides (PRIORITY_CLASSES). Two fields only the unit tier draws
(`unit_only=True`): pod `overhead` (admission wants a RuntimeClass for it) and pod-level `resources`.
"""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st

from mpioperator.api.objects import Obj

LOWER = "abcdefghijklmnopqrstuvwxyz"
DIGITS = "0123456789"
# PriorityClasses the integration tier creates; the unit tier looks their values up here.
PRIORITY_CLASSES = {"fuzz-low": 10, "fuzz-high": 1000}
IMAGES = ("mpioperator/mpi-pi:openmpi", "registry.example.com/team/train:v1.2", "busybox")
SSH_PATHS = ("/root/.ssh", "/home/mpiuser/.ssh")
INT32_MAX = 2**31 - 1


def dns_label(max_size: int = 20) -> st.SearchStrategy[str]:
    """A DNS-1035 label: a lower-case letter, then letters, digits and dashes, ending in a letter or digit."""
    single = st.sampled_from(LOWER)
    if max_size < 2:
        return single
    longer = st.builds(
        lambda first, middle, last: first + middle + last,
        single,
        st.text(LOWER + DIGITS + "-", max_size=max_size - 2),
        st.sampled_from(LOWER + DIGITS),
    )
    return single | longer


@st.composite
def job_name(draw: st.DrawFn, workers: int) -> str:
    """A name whose longest worker hostname, `<name>-worker-<workers-1>`, is a 63-byte DNS label at most."""
    limit = 63 - len("-worker-") - len(str(max(workers, 1) - 1))
    return draw(dns_label(draw(st.integers(1, limit))))


def label_key() -> st.SearchStrategy[str]:
    name = st.from_regex(r"[a-z0-9]([-a-z0-9_.]{0,14}[a-z0-9])?", fullmatch=True)
    prefix = st.sampled_from(("", "example.com/", "team.kubeflow.org/"))
    return st.builds(lambda p, n: p + n, prefix, name)


def label_value() -> st.SearchStrategy[str]:
    return st.just("") | st.from_regex(r"[A-Za-z0-9]([-A-Za-z0-9_.]{0,14}[A-Za-z0-9])?", fullmatch=True)


def annotation_value() -> st.SearchStrategy[str]:
    return st.text(st.characters(exclude_categories=("Cs", "Cc")), max_size=40)


def maybe(draw: st.DrawFn, out: Obj, key: str, strategy: st.SearchStrategy[Any]) -> None:
    """Set `key` half of the time: absent and present fields both reach the code under test."""
    if draw(st.booleans()):
        out[key] = draw(strategy)


def quantity_pair(draw: st.DrawFn, unit: str, largest: int) -> tuple[str, str]:
    """(request, limit) with the request not above the limit."""
    request = draw(st.integers(1, largest))
    limit = draw(st.integers(request, largest))
    return f"{request}{unit}", f"{limit}{unit}"


@st.composite
def resources(draw: st.DrawFn) -> Obj:
    requests: Obj = {}
    limits: Obj = {}
    if draw(st.booleans()):
        requests["cpu"], limit = quantity_pair(draw, "m", 64000)
        if draw(st.booleans()):
            limits["cpu"] = limit
    if draw(st.booleans()):
        requests["memory"], limit = quantity_pair(draw, "Mi", 1 << 20)
        if draw(st.booleans()):
            limits["memory"] = limit
    if draw(st.booleans()):
        # Extended resources cannot be overcommitted: a request, if given, equals the limit.
        gpus = str(draw(st.integers(1, 8)))
        limits["nvidia.com/gpu"] = gpus
        if draw(st.booleans()):
            requests["nvidia.com/gpu"] = gpus
    out: Obj = {}
    if requests:
        out["requests"] = requests
    if limits:
        out["limits"] = limits
    return out


@st.composite
def container(draw: st.DrawFn, name: str, volumes: list[str], ports_from: int, sidecar: bool = False) -> Obj:
    out: Obj = {"name": name, "image": draw(st.sampled_from(IMAGES))}
    words = st.lists(st.text(st.characters(exclude_categories=("Cs", "Cc")), max_size=12), max_size=3)
    maybe(draw, out, "command", words)
    maybe(draw, out, "args", words)
    env_names = st.lists(st.from_regex(r"[A-Z_][A-Z0-9_]{0,12}", fullmatch=True), max_size=3, unique=True)
    maybe(draw, out, "env", env_names.map(lambda names: [{"name": n, "value": n.lower()} for n in names]))
    maybe(draw, out, "resources", resources())
    maybe(draw, out, "imagePullPolicy", st.sampled_from(("Always", "IfNotPresent", "Never")))
    ports = st.lists(st.integers(1, 65535), max_size=2, unique=True).map(
        lambda numbers: [
            {"containerPort": p, "name": f"p{ports_from + i}", "protocol": "TCP"}
            for i, p in enumerate(numbers)
        ]
    )
    maybe(draw, out, "ports", ports)
    if volumes:
        mounted = draw(st.lists(st.sampled_from(volumes), unique=True, max_size=len(volumes)))
        if mounted:
            out["volumeMounts"] = [{"name": v, "mountPath": f"/data/{v}"} for v in mounted]
    maybe(draw, out, "securityContext", st.fixed_dictionaries({"runAsUser": st.integers(0, 65535)}))
    if sidecar:
        out["restartPolicy"] = "Always"
    return out


@st.composite
def pod_spec(draw: st.DrawFn, unit_only: bool = False) -> Obj:
    volumes = [f"vol-{i}" for i in range(draw(st.integers(0, 2)))]
    spec: Obj = {}
    if volumes:
        spec["volumes"] = [{"name": v, "emptyDir": {}} for v in volumes]
    spec["containers"] = [
        draw(container(f"main-{i}", volumes, ports_from=10 * i)) for i in range(draw(st.integers(1, 3)))
    ]
    inits = draw(st.integers(0, 2))
    if inits:
        spec["initContainers"] = [
            draw(container(f"init-{i}", volumes, ports_from=100 + 10 * i, sidecar=draw(st.booleans())))
            for i in range(inits)
        ]
    maybe(draw, spec, "nodeSelector", st.dictionaries(label_key(), label_value(), max_size=2))
    toleration = st.fixed_dictionaries(
        {
            "key": label_key(),
            "operator": st.just("Exists"),
            "effect": st.sampled_from(("NoSchedule", "NoExecute")),
        }
    )
    maybe(draw, spec, "tolerations", st.lists(toleration, max_size=2))
    maybe(draw, spec, "restartPolicy", st.sampled_from(("Always", "OnFailure", "Never")))
    maybe(draw, spec, "priorityClassName", st.sampled_from(sorted(PRIORITY_CLASSES)))
    maybe(draw, spec, "terminationGracePeriodSeconds", st.integers(0, 600))
    maybe(draw, spec, "schedulerName", st.just("default-scheduler"))
    dns = st.fixed_dictionaries(
        {"searches": st.lists(dns_label(12).map(lambda d: f"{d}.example.com"), max_size=3, unique=True)}
    )
    maybe(draw, spec, "dnsConfig", dns)
    gates = st.lists(st.sampled_from(("example.com/quota", "example.com/data")), unique=True, max_size=2)
    maybe(draw, spec, "schedulingGates", gates.map(lambda names: [{"name": n} for n in names]))
    if unit_only:
        maybe(draw, spec, "overhead", st.fixed_dictionaries({"cpu": st.sampled_from(("100m", "1"))}))
        maybe(draw, spec, "resources", resources())
    return spec


@st.composite
def template(draw: st.DrawFn, unit_only: bool = False) -> Obj:
    out: Obj = {"spec": draw(pod_spec(unit_only))}
    meta: Obj = {}
    maybe(draw, meta, "labels", st.dictionaries(label_key(), label_value(), max_size=3))
    maybe(draw, meta, "annotations", st.dictionaries(label_key(), annotation_value(), max_size=3))
    if meta:
        out["metadata"] = meta
    return out


@st.composite
def replica(draw: st.DrawFn, count: int | None, unit_only: bool = False) -> Obj:
    out: Obj = {"template": draw(template(unit_only))}
    if count is not None:
        out["replicas"] = count
    maybe(draw, out, "restartPolicy", st.sampled_from(("Never", "OnFailure")))
    return out


@st.composite
def scheduling_policy(draw: st.DrawFn, workers: int) -> Obj:
    out: Obj = {}
    maybe(draw, out, "minAvailable", st.integers(0, workers + 2))
    maybe(draw, out, "queue", dns_label(12))
    maybe(draw, out, "priorityClass", st.sampled_from(sorted(PRIORITY_CLASSES)))
    min_resources = st.fixed_dictionaries(
        {},
        optional={
            "cpu": st.sampled_from(("500m", "4", "128")),
            "memory": st.sampled_from(("512Mi", "16Gi", "1Ti")),
            "nvidia.com/gpu": st.sampled_from(("1", "8")),
        },
    )
    maybe(draw, out, "minResources", min_resources)
    maybe(draw, out, "scheduleTimeoutSeconds", st.integers(0, 3600))
    return out


@st.composite
def run_policy(draw: st.DrawFn, workers: int) -> Obj:
    out: Obj = {}
    maybe(draw, out, "cleanPodPolicy", st.sampled_from(("None", "Running", "All")))
    maybe(draw, out, "ttlSecondsAfterFinished", st.integers(0, INT32_MAX))
    maybe(draw, out, "activeDeadlineSeconds", st.integers(0, 10**9))
    maybe(draw, out, "backoffLimit", st.integers(0, INT32_MAX))
    maybe(draw, out, "suspend", st.booleans())
    maybe(draw, out, "managedBy", st.sampled_from(("kubeflow.org/mpi-operator", "kueue.x-k8s.io/multikueue")))
    maybe(draw, out, "schedulingPolicy", scheduling_policy(workers))
    return out


@st.composite
def mpijobs(
    draw: st.DrawFn, *, namespace: str = "fuzz", max_workers: int = 8, unit_only: bool = False
) -> Obj:
    """A valid MPIJob as a user would submit it (no defaults filled in), with the uid the API would add."""
    workers = draw(st.integers(0, max_workers))
    replicas: Obj = {"Launcher": draw(replica(draw(st.sampled_from((None, 1))), unit_only))}
    if workers:
        replicas["Worker"] = draw(replica(workers, unit_only))
    spec: Obj = {"mpiReplicaSpecs": replicas}
    maybe(draw, spec, "slotsPerWorker", st.integers(0, 64))
    maybe(draw, spec, "runLauncherAsWorker", st.booleans())
    maybe(draw, spec, "sshAuthMountPath", st.sampled_from(SSH_PATHS))
    maybe(draw, spec, "mpiImplementation", st.sampled_from(("OpenMPI", "Intel", "MPICH")))
    maybe(draw, spec, "launcherCreationPolicy", st.sampled_from(("AtStartup", "WaitForWorkersReady")))
    maybe(draw, spec, "runPolicy", run_policy(workers))
    metadata: Obj = {"name": draw(job_name(workers)), "namespace": namespace, "uid": str(draw(st.uuids()))}
    maybe(draw, metadata, "labels", st.dictionaries(label_key(), label_value(), max_size=2))
    return {"apiVersion": "kubeflow.org/v2beta1", "kind": "MPIJob", "metadata": metadata, "spec": spec}
