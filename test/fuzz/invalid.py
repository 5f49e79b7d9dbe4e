"""Random invalid MPIJobs: a valid one (test.fuzz.specs) with one defect, and the defect's description.

Some defects are the CRD's to reject (bad names, unknown enums, negative numbers, wrong replica counts,
wrong types); others only the API server's Pod, Job or Service validation sees, once the operator builds a
child (bad container names, ports, volumes, resources, labels, node affinity operators, too many DNS search
domains, a volume or mount that collides with the operator's own). Which defect the CRD catches is not assumed here: the test
only requires that each one is rejected by the API server or reported by the operator.

Defects in a pod template are made reachable in one sync: the job is not suspended, not managed by another
controller, and a launcher with a defect is created at start-up rather than once workers are ready.
"""

from __future__ import annotations

import copy
from collections.abc import Callable

from hypothesis import strategies as st

from mpioperator.api.objects import Obj
from test.fuzz.specs import mpijobs

Defect = Callable[[st.DrawFn, Obj], str]


def _spec(job: Obj) -> Obj:
    spec: Obj = job["spec"]
    return spec


def _run_policy(job: Obj) -> Obj:
    policy: Obj = _spec(job).setdefault("runPolicy", {})
    return policy


def _replica_name(draw: st.DrawFn, job: Obj) -> str:
    names: list[str] = sorted(_spec(job)["mpiReplicaSpecs"])
    return draw(st.sampled_from(names))


def _pod(draw: st.DrawFn, job: Obj) -> tuple[str, Obj]:
    """A replica's pod spec to spoil; a spoiled launcher is created at start-up."""
    role = _replica_name(draw, job)
    if role == "Launcher":
        _spec(job)["launcherCreationPolicy"] = "AtStartup"
    return role, _spec(job)["mpiReplicaSpecs"][role]["template"]["spec"]


def bad_name(draw: st.DrawFn, job: Obj) -> str:
    name = job["metadata"]["name"]
    spoiled = {
        "upper case": name[:1] + "X" + name[1:],
        "underscore": name[:1] + "_" + name[1:],
        "trailing dash": name + "-",
        "dot": name + "." + name,
        "too long": (name * 64)[:80],
    }
    kind = draw(st.sampled_from(sorted(spoiled)))
    job["metadata"]["name"] = spoiled[kind]
    return f"name: {kind}"


def unknown_enum(draw: st.DrawFn, job: Obj) -> str:
    field = draw(
        st.sampled_from(("mpiImplementation", "launcherCreationPolicy", "cleanPodPolicy", "managedBy"))
    )
    value = draw(st.sampled_from(("Sometimes", "openmpi", "", "kubeflow.org/other")))
    target = _run_policy(job) if field in ("cleanPodPolicy", "managedBy") else _spec(job)
    target[field] = value
    return f"enum: {field} {value!r}"


def unknown_restart_policy(draw: st.DrawFn, job: Obj) -> str:
    role = _replica_name(draw, job)
    value = draw(st.sampled_from(("Always", "ExitCode", "Sometimes")))
    _spec(job)["mpiReplicaSpecs"][role]["restartPolicy"] = value
    return f"enum: {role} restartPolicy {value!r}"


def negative_number(draw: st.DrawFn, job: Obj) -> str:
    field = draw(
        st.sampled_from(
            (
                "slotsPerWorker",
                "ttlSecondsAfterFinished",
                "activeDeadlineSeconds",
                "backoffLimit",
                "minAvailable",
            )
        )
    )
    value = draw(st.integers(-(2**31), -1))
    if field == "slotsPerWorker":
        _spec(job)[field] = value
    elif field == "minAvailable":
        _run_policy(job).setdefault("schedulingPolicy", {})[field] = value
    else:
        _run_policy(job)[field] = value
    return f"negative: {field}"


def wrong_replicas(draw: st.DrawFn, job: Obj) -> str:
    replicas = _spec(job)["mpiReplicaSpecs"]
    choice = draw(st.sampled_from(("launcher", "worker", "no-launcher", "no-worker-count", "none")))
    if choice == "launcher":
        replicas["Launcher"]["replicas"] = draw(st.sampled_from((0, 2, 100)))
        return f"replicas: Launcher {replicas['Launcher']['replicas']}"
    if choice == "worker" and "Worker" in replicas:
        replicas["Worker"]["replicas"] = 0
        return "replicas: Worker 0"
    if choice == "no-worker-count" and "Worker" in replicas:
        del replicas["Worker"]["replicas"]
        return "replicas: Worker without a count"
    if choice == "no-launcher":
        del replicas["Launcher"]
        return "replicas: no Launcher"
    _spec(job)["mpiReplicaSpecs"] = {}
    return "replicas: none"


def wrong_type(draw: st.DrawFn, job: Obj) -> str:
    choice = draw(st.sampled_from(("slots", "suspend", "replicas", "containers", "template")))
    replicas = _spec(job)["mpiReplicaSpecs"]
    if choice == "slots":
        _spec(job)["slotsPerWorker"] = "two"
    elif choice == "suspend":
        _run_policy(job)["suspend"] = "yes"
    elif choice == "replicas":
        replicas["Launcher"]["replicas"] = "1"
    elif choice == "containers":
        replicas["Launcher"]["template"]["spec"]["containers"] = draw(st.sampled_from(([], {}, "main")))
    else:
        del replicas["Launcher"]["template"]
    return f"type: {choice}"


def bad_container(draw: st.DrawFn, job: Obj) -> str:
    role, pod = _pod(draw, job)
    first = pod["containers"][0]
    choice = draw(st.sampled_from(("name", "duplicate", "pull", "port", "env", "mount", "resources")))
    if choice == "name":
        first["name"] = draw(st.sampled_from(("Main_Container", "-main", "a" * 64)))
    elif choice == "duplicate":
        pod["containers"].append(copy.deepcopy(first))
    elif choice == "pull":
        first["imagePullPolicy"] = "Sometimes"
    elif choice == "port":
        first["ports"] = [{"containerPort": draw(st.sampled_from((0, 65536, -1)))}]
    elif choice == "env":
        first["env"] = [{"name": "", "value": "x"}]
    elif choice == "mount":
        first["volumeMounts"] = [{"name": "missing-volume", "mountPath": "/missing"}]
    else:
        first["resources"] = {"requests": {"cpu": "2"}, "limits": {"cpu": "1"}}
    return f"container: {choice} ({role})"


def bad_pod(draw: st.DrawFn, job: Obj) -> str:
    role, pod = _pod(draw, job)
    template = _spec(job)["mpiReplicaSpecs"][role]["template"]
    mount_path = _spec(job).get("sshAuthMountPath") or "/root/.ssh"
    choice = draw(st.sampled_from(("label", "searches", "ssh-volume", "ssh-mount", "affinity")))
    if choice == "label":
        template.setdefault("metadata", {})["labels"] = {"team": "not a valid value!"}
    elif choice == "searches":
        # 32 is the limit: the operator adds the job's own domain to a worker's, so 32 are one too many there.
        count = 32 if role == "Worker" else 33
        pod["dnsConfig"] = {"searches": [f"s{i}.example.com" for i in range(count)]}
    elif choice == "ssh-volume":
        pod["volumes"] = [*(pod.get("volumes") or []), {"name": "ssh-auth", "emptyDir": {}}]
    elif choice == "ssh-mount":
        pod["volumes"] = [*(pod.get("volumes") or []), {"name": "mine", "emptyDir": {}}]
        pod["containers"][0]["volumeMounts"] = [{"name": "mine", "mountPath": mount_path}]
    else:
        term = {"matchExpressions": [{"key": "zone", "operator": "Near", "values": ["a"]}]}
        pod["affinity"] = {
            "nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [term]}}
        }
    return f"pod: {choice} ({role})"


DEFECTS: dict[str, Defect] = {
    "name": bad_name,
    "enum": unknown_enum,
    "restart-policy": unknown_restart_policy,
    "negative": negative_number,
    "replicas": wrong_replicas,
    "type": wrong_type,
    "container": bad_container,
    "pod": bad_pod,
}


@st.composite
def invalid_mpijobs(draw: st.DrawFn, defect: Defect, namespace: str = "fuzz") -> tuple[Obj, str]:
    """A valid MPIJob spoiled by `defect`, and what the defect did."""
    job = draw(mpijobs(namespace=namespace, max_workers=3))
    run_policy = _run_policy(job)
    run_policy.pop("suspend", None)
    run_policy.pop("managedBy", None)
    return job, defect(draw, job)
