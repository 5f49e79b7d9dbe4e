"""The CRD refuses at `kubectl apply` what upstream only reports later as an event, naming the field,
and accepts every valid MPIJob, however rich its pod templates."""

from __future__ import annotations

import copy
import re
from collections.abc import Callable
from typing import Any

import pytest
import yaml

from mpioperator.controller.builders.configmap import worker_replicas_ceiling
from mpioperator.testing.cluster import LocalCluster
from test.integration.manifests.conftest import REPO

Job = dict[str, Any]


def base_job(name: str = "job") -> Job:
    return {
        "apiVersion": "kubeflow.org/v2beta1",
        "kind": "MPIJob",
        "metadata": {"name": name},
        "spec": {
            "mpiReplicaSpecs": {
                "Launcher": {
                    "replicas": 1,
                    "template": {"spec": {"containers": [{"name": "l", "image": "i"}]}},
                },
                "Worker": {
                    "replicas": 2,
                    "template": {"spec": {"containers": [{"name": "w", "image": "i"}]}},
                },
            }
        },
    }


def edit(change: Callable[[Job], object], name: str = "job") -> Job:
    job = base_job(name)
    change(job)
    return job


def spec(job: Job) -> Job:
    spec_: Job = job["spec"]
    return spec_


def replicas(job: Job, kind: str) -> Job:
    found: Job = job["spec"]["mpiReplicaSpecs"][kind]
    return found


def run_policy(job: Job) -> Job:
    found: Job = job["spec"].setdefault("runPolicy", {})
    return found


MALFORMED: list[tuple[str, Job, str]] = [
    (
        "unknown mpiImplementation",
        edit(lambda j: spec(j).update(mpiImplementation="OpenMPIX")),
        "spec.mpiImplementation",
    ),
    (
        "lower-case implementation",
        edit(lambda j: spec(j).update(mpiImplementation="openmpi")),
        "spec.mpiImplementation",
    ),
    (
        "bad launcherCreationPolicy",
        edit(lambda j: spec(j).update(launcherCreationPolicy="WhenReady")),
        "spec.launcherCreationPolicy",
    ),
    ("negative slotsPerWorker", edit(lambda j: spec(j).update(slotsPerWorker=-1)), "spec.slotsPerWorker"),
    # The hostfile's bound on workers counts an int32's ten digits of slots (configmap.largest_shape).
    (
        "slotsPerWorker beyond an int32",
        edit(lambda j: spec(j).update(slotsPerWorker=2**31)),
        "spec.slotsPerWorker",
    ),
    ("empty sshAuthMountPath", edit(lambda j: spec(j).update(sshAuthMountPath="")), "spec.sshAuthMountPath"),
    (
        "bad cleanPodPolicy",
        edit(lambda j: run_policy(j).update(cleanPodPolicy="Sometimes")),
        "spec.runPolicy.cleanPodPolicy",
    ),
    (
        "negative backoffLimit",
        edit(lambda j: run_policy(j).update(backoffLimit=-1)),
        "spec.runPolicy.backoffLimit",
    ),
    (
        "negative activeDeadlineSeconds",
        edit(lambda j: run_policy(j).update(activeDeadlineSeconds=-5)),
        "spec.runPolicy.activeDeadlineSeconds",
    ),
    (
        "negative ttlSecondsAfterFinished",
        edit(lambda j: run_policy(j).update(ttlSecondsAfterFinished=-1)),
        "spec.runPolicy.ttlSecondsAfterFinished",
    ),
    (
        "bad managedBy",
        edit(lambda j: run_policy(j).update(managedBy="example.com/other")),
        "spec.runPolicy.managedBy",
    ),
    (
        "negative minAvailable",
        edit(lambda j: run_policy(j).update(schedulingPolicy={"minAvailable": -1})),
        "spec.runPolicy.schedulingPolicy.minAvailable",
    ),
    (
        "negative scheduleTimeoutSeconds",
        edit(lambda j: run_policy(j).update(schedulingPolicy={"scheduleTimeoutSeconds": -1})),
        "spec.runPolicy.schedulingPolicy.scheduleTimeoutSeconds",
    ),
    (
        "bad minResources quantity",
        edit(lambda j: run_policy(j).update(schedulingPolicy={"minResources": {"cpu": "lots"}})),
        "spec.runPolicy.schedulingPolicy.minResources.cpu",
    ),
    (
        "launcher replicas 2",
        edit(lambda j: replicas(j, "Launcher").update(replicas=2)),
        "spec.mpiReplicaSpecs[Launcher].replicas",
    ),
    (
        "worker replicas 0",
        edit(lambda j: replicas(j, "Worker").update(replicas=0)),
        "spec.mpiReplicaSpecs[Worker].replicas",
    ),
    (
        "worker replicas missing",
        edit(lambda j: replicas(j, "Worker").pop("replicas")),
        "spec.mpiReplicaSpecs[Worker].replicas",
    ),
    (
        "worker replicas of an int32's maximum",
        edit(lambda j: replicas(j, "Worker").update(replicas=2**31 - 1)),
        "spec.mpiReplicaSpecs[Worker].replicas",
    ),
    (
        "worker replicas one above the ceiling",
        edit(lambda j: replicas(j, "Worker").update(replicas=worker_replicas_ceiling() + 1)),
        "spec.mpiReplicaSpecs[Worker].replicas",
    ),
    (
        "negative worker replicas",
        edit(lambda j: replicas(j, "Worker").update(replicas=-3)),
        "spec.mpiReplicaSpecs[Worker].replicas",
    ),
    ("no launcher", edit(lambda j: spec(j)["mpiReplicaSpecs"].pop("Launcher")), "spec.mpiReplicaSpecs"),
    ("no replica specs", edit(lambda j: spec(j).pop("mpiReplicaSpecs")), "spec.mpiReplicaSpecs"),
    (
        "launcher restartPolicy Always",
        edit(lambda j: replicas(j, "Launcher").update(restartPolicy="Always")),
        "spec.mpiReplicaSpecs[Launcher].restartPolicy",
    ),
    (
        "worker restartPolicy ExitCode",
        edit(lambda j: replicas(j, "Worker").update(restartPolicy="ExitCode")),
        "spec.mpiReplicaSpecs[Worker].restartPolicy",
    ),
    (
        "worker without containers",
        edit(lambda j: replicas(j, "Worker")["template"]["spec"].update(containers=[])),
        "spec.mpiReplicaSpecs[Worker].template.spec.containers",
    ),
    (
        "worker template without spec",
        edit(lambda j: replicas(j, "Worker")["template"].pop("spec")),
        "spec.mpiReplicaSpecs[Worker].template.spec",
    ),
    (
        "launcher without template",
        edit(lambda j: replicas(j, "Launcher").pop("template")),
        "spec.mpiReplicaSpecs[Launcher].template",
    ),
    (
        "name too long for worker hostnames",
        edit(lambda j: replicas(j, "Worker").update(replicas=100), name="a" * 54),
        "metadata.name",
    ),
    ("name starting with a digit", base_job(name="1-pi"), "metadata.name"),
    # A valid DNS subdomain (Kubernetes accepts it) but not a DNS-1035 label, so no worker hostname.
    ("name with a dot", base_job(name="pi.v2"), "metadata.name"),
    ("no spec", edit(lambda j: j.pop("spec")), "spec"),
    (
        "container without a name",
        edit(lambda j: replicas(j, "Worker")["template"]["spec"].update(containers=[{"image": "i"}])),
        "spec.mpiReplicaSpecs[Worker].template.spec.containers[0].name",
    ),
]


def apply(cluster: LocalCluster, ns: str, job: Job) -> tuple[int, str]:
    result = cluster.kubectl("apply", "-n", ns, "-f", "-", input=yaml.safe_dump(job), check=False)
    return result.returncode, result.stderr + result.stdout


def upstream_paths(output: str) -> str:
    """The API server writes map keys as `.Worker.` or `.[Worker]`; upstream's paths say `[Worker]`."""
    for kind in ("Launcher", "Worker"):
        output = output.replace(f"mpiReplicaSpecs.[{kind}]", f"mpiReplicaSpecs[{kind}]")
        output = output.replace(f"mpiReplicaSpecs.{kind}", f"mpiReplicaSpecs[{kind}]")
    return output


CRD_FILE = REPO / "manifests/base/kubeflow.org_mpijobs.yaml"
# Rules that only compare with the stored object (oldSelf) cannot refuse a new MPIJob; the managedBy
# test below covers them.
TRANSITION_RULE = "oldSelf"


def schema_nodes(schema: Job, path: str = "") -> list[tuple[str, Job]]:
    """Every node of the MPIJob schema with its path as the API server names fields: `spec.runPolicy`,
    `*` for a map key (`mpiReplicaSpecs[*]`, `minResources.*`), `[*]` for a list item."""
    found = [(path, schema)]
    for name, child in (schema.get("properties") or {}).items():
        found += schema_nodes(child, f"{path}.{name}" if path else name)
    if isinstance(schema.get("items"), dict):
        found += schema_nodes(schema["items"], f"{path}[*]")
    if isinstance(schema.get("additionalProperties"), dict):
        key = "[*]" if path.endswith("mpiReplicaSpecs") else ".*"
        found += schema_nodes(schema["additionalProperties"], path + key)
    return found


def constrained_fields() -> set[str]:
    """The fields a new MPIJob can break a CRD rule of: enums, bounds, patterns, required fields and
    CEL rules. Inside pod templates only what the CRD adds to Kubernetes' own PodSpec schema (whose
    required fields and quantity patterns the API server checks for every pod anyway)."""
    crd = yaml.safe_load(CRD_FILE.read_text())
    root = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    fields: set[str] = set()
    for path, node in schema_nodes(root):
        if path.startswith("status"):
            continue  # written by the operator, not by users
        in_pod_spec = ".template.spec." in path
        if not in_pod_spec:
            fields.update(f"{path}.{name}" if path else name for name in node.get("required") or ())
            if any(
                key in node for key in ("enum", "minimum", "maximum", "pattern", "minLength", "maxLength")
            ):
                fields.add(path)
        if any(key in node for key in ("minItems", "maxItems")):
            fields.add(path)
        for rule in node.get("x-kubernetes-validations") or ():
            if TRANSITION_RULE in rule["rule"]:
                continue
            where = rule.get("fieldPath", "").replace("['", "[").replace("']", "]")
            # A rule on the root names its field in its message, as upstream's check does.
            fields.add(path + where if path else rule["message"].split(":")[0])
    return fields


def covers(case_field: str, crd_field: str) -> bool:
    pattern = re.escape(crd_field).replace(r"\[\*\]", r"\[[^]]+\]").replace(r"\.\*", r"\.[^.]+")
    return re.fullmatch(pattern, case_field) is not None


def test_every_rule_the_crd_sets_on_a_new_mpijob_has_a_malformed_case() -> None:
    fields = constrained_fields()
    assert "spec.runPolicy.cleanPodPolicy" in fields and "metadata.name" in fields  # the walk sees rules
    uncovered = sorted(f for f in fields if not any(covers(field, f) for _, _, field in MALFORMED))
    assert uncovered == [], "CRD rules no malformed case breaks"


@pytest.mark.parametrize(("case", "job", "field"), MALFORMED, ids=[c for c, _, _ in MALFORMED])
def test_malformed_mpijob_is_rejected_naming_the_field(
    crd_cluster: LocalCluster, make_namespace: Any, case: str, job: Job, field: str
) -> None:
    ns = make_namespace(crd_cluster)
    code, output = apply(crd_cluster, ns, job)
    assert code != 0, f"{case}: accepted"
    assert field in upstream_paths(output), output


def test_managed_by_cannot_change_after_creation(crd_cluster: LocalCluster, make_namespace: Any) -> None:
    ns = make_namespace(crd_cluster)
    job = edit(lambda j: run_policy(j).update(managedBy="kueue.x-k8s.io/multikueue"))
    assert apply(crd_cluster, ns, job)[0] == 0
    changed = copy.deepcopy(job)
    changed["spec"]["runPolicy"]["managedBy"] = "kubeflow.org/mpi-operator"
    code, output = apply(crd_cluster, ns, changed)
    assert code != 0
    assert "managedBy" in output and "immutable" in output
    removed = copy.deepcopy(job)
    del removed["spec"]["runPolicy"]["managedBy"]
    code, output = apply(crd_cluster, ns, removed)
    assert code != 0
    assert "immutable" in output


RICH_TEMPLATE: Job = {
    "metadata": {"labels": {"team": "ml"}, "annotations": {"sidecar.istio.io/inject": "false"}},
    "spec": {
        "initContainers": [
            {"name": "fetch-data", "image": "busybox", "command": ["sh", "-c", "true"]},
            {"name": "log-shipper", "image": "fluent-bit", "restartPolicy": "Always"},
        ],
        "containers": [
            {
                "name": "main",
                "image": "mpioperator/mpi-pi:openmpi",
                "ports": [{"containerPort": 2222, "name": "ssh"}],
                "env": [
                    {"name": "A", "value": "1"},
                    {"name": "POD", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}},
                ],
                "resources": {
                    "requests": {"cpu": "500m", "memory": "1Gi", "nvidia.com/gpu": 1},
                    "limits": {"cpu": 2, "memory": "4Gi", "nvidia.com/gpu": "1"},
                },
                "securityContext": {
                    "runAsUser": 1000,
                    "runAsNonRoot": True,
                    "allowPrivilegeEscalation": False,
                    "capabilities": {"add": ["NET_BIND_SERVICE"], "drop": ["ALL"]},
                },
                "volumeMounts": [
                    {"name": "data", "mountPath": "/data"},
                    {"name": "shm", "mountPath": "/dev/shm"},
                ],
                "readinessProbe": {"tcpSocket": {"port": 2222}, "initialDelaySeconds": 2},
                "livenessProbe": {"httpGet": {"path": "/", "port": "http"}},
            },
            {"name": "sidecar", "image": "busybox", "args": ["sleep", "infinity"]},
        ],
        "volumes": [
            {"name": "data", "persistentVolumeClaim": {"claimName": "dataset"}},
            {"name": "shm", "emptyDir": {"medium": "Memory", "sizeLimit": "2Gi"}},
            {"name": "cfg", "configMap": {"name": "cfg", "items": [{"key": "a", "path": "a", "mode": 420}]}},
            {
                "name": "proj",
                "projected": {
                    "sources": [{"serviceAccountToken": {"path": "token", "expirationSeconds": 3600}}]
                },
            },
        ],
        "affinity": {
            "nodeAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {
                    "nodeSelectorTerms": [
                        {"matchExpressions": [{"key": "gpu", "operator": "In", "values": ["a100"]}]}
                    ]
                }
            },
            "podAntiAffinity": {
                "preferredDuringSchedulingIgnoredDuringExecution": [
                    {
                        "weight": 100,
                        "podAffinityTerm": {
                            "topologyKey": "kubernetes.io/hostname",
                            "labelSelector": {"matchLabels": {"training.kubeflow.org/job-role": "worker"}},
                        },
                    }
                ]
            },
        },
        "tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}],
        "nodeSelector": {"pool": "gpu"},
        "topologySpreadConstraints": [
            {
                "maxSkew": 1,
                "topologyKey": "zone",
                "whenUnsatisfiable": "ScheduleAnyway",
                "labelSelector": {"matchLabels": {"a": "b"}},
            }
        ],
        "securityContext": {"fsGroup": 1000, "seccompProfile": {"type": "RuntimeDefault"}},
        "priorityClassName": "high",
        "schedulerName": "default-scheduler",
        "hostNetwork": False,
        "dnsPolicy": "ClusterFirst",
        "terminationGracePeriodSeconds": 30,
        "imagePullSecrets": [{"name": "registry"}],
        "overhead": {"cpu": "100m"},
        "resourceClaims": [{"name": "gpu", "resourceClaimTemplateName": "gpu-template"}],
        "schedulingGates": [{"name": "example.com/gate"}],
    },
}


def rich_job(name: str, **spec_fields: Any) -> Job:
    job = base_job(name)
    for kind in ("Launcher", "Worker"):
        job["spec"]["mpiReplicaSpecs"][kind]["template"] = copy.deepcopy(RICH_TEMPLATE)
    job["spec"].update(spec_fields)
    return job


VALID: list[Job] = [
    rich_job("rich-openmpi"),
    rich_job(
        "rich-intel", mpiImplementation="Intel", slotsPerWorker=8, sshAuthMountPath="/home/mpiuser/.ssh"
    ),
    rich_job("rich-mpich", mpiImplementation="MPICH", launcherCreationPolicy="WaitForWorkersReady"),
    rich_job(
        "rich-policies",
        runPolicy={
            "cleanPodPolicy": "All",
            "ttlSecondsAfterFinished": 0,
            "activeDeadlineSeconds": 3600,
            "backoffLimit": 0,
            "suspend": True,
            "managedBy": "kubeflow.org/mpi-operator",
            "schedulingPolicy": {
                "minAvailable": 3,
                "queue": "research",
                "minResources": {"cpu": "21", "memory": "42Gi", "nvidia.com/gpu": 8},
                "priorityClass": "high",
                "scheduleTimeoutSeconds": 900,
            },
        },
    ),
    edit(
        lambda j: (spec(j).update(runLauncherAsWorker=True), spec(j)["mpiReplicaSpecs"].pop("Worker")),
        name="solo",
    ),
    edit(lambda j: replicas(j, "Launcher").pop("replicas"), name="implicit-launcher-replicas"),
    edit(lambda j: spec(j).update(slotsPerWorker=0), name="zero-slots"),
    edit(lambda j: replicas(j, "Worker").update(replicas=99), name="p" * 53),
    edit(lambda j: replicas(j, "Worker").update(replicas=worker_replicas_ceiling()), name="ceiling"),
]


@pytest.mark.parametrize("job", VALID, ids=[j["metadata"]["name"][:30] for j in VALID])
def test_valid_mpijob_with_rich_templates_is_accepted_and_kept(
    crd_cluster: LocalCluster, make_namespace: Any, job: Job
) -> None:
    ns = make_namespace(crd_cluster)
    code, output = apply(crd_cluster, ns, job)
    assert code == 0, output
    stored = crd_cluster.rest.get(
        f"/apis/kubeflow.org/v2beta1/namespaces/{ns}/mpijobs/{job['metadata']['name']}"
    )
    for kind, replica in job["spec"]["mpiReplicaSpecs"].items():
        assert (
            stored["spec"]["mpiReplicaSpecs"][kind]["template"]["spec"]["containers"][0]["name"]
            == replica["template"]["spec"]["containers"][0]["name"]
        )
        if "initContainers" in replica["template"]["spec"]:
            assert (
                stored["spec"]["mpiReplicaSpecs"][kind]["template"]["spec"]["initContainers"][1][
                    "restartPolicy"
                ]
                == "Always"
            )
