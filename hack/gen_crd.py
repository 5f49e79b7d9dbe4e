#!/usr/bin/env python3
"""Generate manifests/base/kubeflow.org_mpijobs.yaml, the MPIJob v2beta1 CRD.

Sources of truth: the embedded PodTemplateSpec comes from the real Kubernetes OpenAPI v3 document of
the pinned k8s.io/kubernetes module (api/openapi-spec/v3/api__v1_openapi.json in the Go module cache,
downloaded by hack/build-control-plane.sh), resolved by hack/crd_openapi.py; the MPIJob fields come from
the tables below, which mirror upstream's Go types. Validation that upstream only performs in its
controller (validation.go) is expressed as enums, minimums and CEL rules so that `kubectl apply` refuses
what would never run.

  python hack/gen_crd.py            # write the CRD
  python hack/gen_crd.py --check    # exit 1 with a diff when the committed CRD is stale
"""

from __future__ import annotations

import argparse
import copy
import json
import sys
from pathlib import Path
from typing import Any

import yaml

REPO = Path(__file__).resolve().parents[1]
OUTPUT = REPO / "manifests" / "base" / "kubeflow.org_mpijobs.yaml"
Schema = dict[str, Any]

# hack/ is not a package: its siblings are found from here whether this runs as a script or is loaded
# from its path by the tests.
sys.path.insert(0, str(Path(__file__).resolve().parent))
from crd_extensions import (  # noqa: E402
    desc,
    extension_status,
    last_words_status,
    progress_column,
    progress_status,
    scale_subresource,
)
from crd_openapi import CORE, SPECIAL, Resolver, openapi_path  # noqa: E402
from generated import check_flag, write_or_check  # noqa: E402

from mpioperator.controller.builders.configmap import worker_replicas_ceiling  # noqa: E402


def pod_template(resolver: Resolver) -> Schema:
    """PodTemplateSpec with the embedded ObjectMeta controller-gen emits (generateEmbeddedObjectMeta)."""
    spec = resolver.named(CORE + "PodSpec")
    metadata: Schema = {
        "type": "object",
        "properties": {
            "annotations": {"type": "object", "additionalProperties": {"type": "string"}},
            "finalizers": {"type": "array", "items": {"type": "string"}},
            "labels": {"type": "object", "additionalProperties": {"type": "string"}},
            "name": {"type": "string"},
            "namespace": {"type": "string"},
        },
    }
    # A pod needs a container; saying so here makes kubectl name the field instead of the
    # operator emitting an event later.
    spec["properties"]["containers"]["minItems"] = 1
    return {
        "type": "object",
        "description": "Template is the pod template of this replica type.",
        "required": ["spec"],
        "properties": {"metadata": metadata, "spec": spec},
    }


def replica_spec(resolver: Resolver) -> Schema:
    return {
        "type": "object",
        "description": "A replica type of the MPIJob: how many pods and from which template.",
        "properties": {
            "replicas": desc(
                "Number of replicas. Launcher: must be 1 (the default). Worker: at least 1, and at most "
                "the operator's --max-worker-replicas.",
                # Above it no job's hostfile fits a ConfigMap; the operator's flag may set a lower bound.
                {"type": "integer", "format": "int32", "minimum": 0, "maximum": worker_replicas_ceiling()},
            ),
            "restartPolicy": desc(
                "Restart policy of the pods. Launcher defaults to OnFailure, Worker to Never.",
                {"type": "string", "enum": ["Never", "OnFailure"]},
            ),
            "template": pod_template(resolver),
        },
        "required": ["template"],
    }


def run_policy() -> Schema:
    int32_min0 = {"type": "integer", "format": "int32", "minimum": 0}
    return {
        "type": "object",
        "description": "Policies that apply to the job as a whole.",
        "properties": {
            "activeDeadlineSeconds": desc(
                "Seconds the launcher Job may be active before the system terminates it.",
                {"type": "integer", "format": "int64", "minimum": 0},
            ),
            "backoffLimit": desc("Retries of the launcher before the job is marked Failed.", int32_min0),
            "cleanPodPolicy": desc(
                "Which worker pods to delete when the job finishes. Defaults to Running.",
                {"type": "string", "enum": ["None", "Running", "All"]},
            ),
            "managedBy": desc(
                "The controller that manages the job: kubeflow.org/mpi-operator (default) or "
                "kueue.x-k8s.io/multikueue. Immutable.",
                {
                    "type": "string",
                    "enum": ["kubeflow.org/mpi-operator", "kueue.x-k8s.io/multikueue"],
                    "x-kubernetes-validations": [
                        {"rule": "self == oldSelf", "message": "managedBy is immutable"}
                    ],
                },
            ),
            "schedulingPolicy": desc(
                "Gang-scheduling settings, used when the operator runs with --gang-scheduling.",
                {
                    "type": "object",
                    "properties": {
                        "minAvailable": {"type": "integer", "format": "int32", "minimum": 0},
                        "minResources": {
                            "type": "object",
                            "additionalProperties": copy.deepcopy(
                                SPECIAL["io.k8s.apimachinery.pkg.api.resource.Quantity"]
                            ),
                        },
                        "priorityClass": {"type": "string"},
                        "queue": {"type": "string"},
                        "scheduleTimeoutSeconds": {"type": "integer", "format": "int32", "minimum": 0},
                    },
                },
            ),
            "suspend": desc(
                "Suspends the job: no pods run while true.", {"type": "boolean", "default": False}
            ),
            "ttlSecondsAfterFinished": desc("Seconds after which a finished job is deleted.", int32_min0),
        },
        "x-kubernetes-validations": [
            {
                "rule": "has(self.managedBy) == has(oldSelf.managedBy)",
                "message": "managedBy is immutable",
                "fieldPath": ".managedBy",
            }
        ],
    }


def job_status() -> Schema:
    replica_status = {
        "type": "object",
        "properties": {
            "active": {"type": "integer", "format": "int32"},
            "failed": {"type": "integer", "format": "int32"},
            "labelSelector": {
                "type": "object",
                "x-kubernetes-map-type": "atomic",
                "properties": {
                    "matchExpressions": {
                        "type": "array",
                        "x-kubernetes-list-type": "atomic",
                        "items": {
                            "type": "object",
                            "required": ["key", "operator"],
                            "properties": {
                                "key": {"type": "string"},
                                "operator": {"type": "string"},
                                "values": {
                                    "type": "array",
                                    "items": {"type": "string"},
                                    "x-kubernetes-list-type": "atomic",
                                },
                            },
                        },
                    },
                    "matchLabels": {"type": "object", "additionalProperties": {"type": "string"}},
                },
            },
            "selector": {"type": "string"},
            "succeeded": {"type": "integer", "format": "int32"},
        },
    }
    condition = {
        "type": "object",
        "required": ["status", "type"],
        "properties": {
            "lastTransitionTime": {"type": "string", "format": "date-time"},
            "lastUpdateTime": {"type": "string", "format": "date-time"},
            "message": {"type": "string"},
            "reason": {"type": "string"},
            "status": {"type": "string", "enum": ["True", "False", "Unknown"]},
            "type": {"type": "string"},
        },
    }
    return {
        "type": "object",
        "description": "Observed state of the MPIJob, written by the operator.",
        "properties": {
            "completionTime": {"type": "string", "format": "date-time"},
            "conditions": {
                "type": "array",
                "items": condition,
                "x-kubernetes-list-map-keys": ["type"],
                "x-kubernetes-list-type": "map",
            },
            "lastReconcileTime": {"type": "string", "format": "date-time"},
            "replicaStatuses": {"type": "object", "additionalProperties": replica_status},
            "startTime": {"type": "string", "format": "date-time"},
            **extension_status(),
            **last_words_status(),
            **progress_status(),
        },
    }


_WORKERS = (
    "(has(self.spec) && has(self.spec.mpiReplicaSpecs) && 'Worker' in self.spec.mpiReplicaSpecs && "
    "has(self.spec.mpiReplicaSpecs['Worker'].replicas) && self.spec.mpiReplicaSpecs['Worker'].replicas > 0 ? "
    "self.spec.mpiReplicaSpecs['Worker'].replicas : 1)"
)
# Upstream's first validation check: the longest worker hostname, <name>-worker-<replicas-1>, must be a
# DNS-1035 label. It ends in a digit, so only the name's characters and the total length need checking;
# the length is summed because CEL cannot bound the size of string(int) in a concatenation.
HOSTNAME_RULE = (
    "self.metadata.name.matches('^[a-z][-a-z0-9]*$') && "
    f"size(self.metadata.name) + size('-worker-') + size(string({_WORKERS} - 1)) <= 63"
)


def mpijob_schema(resolver: Resolver) -> Schema:
    spec = {
        "type": "object",
        "description": "The desired state of the MPIJob.",
        "required": ["mpiReplicaSpecs"],
        "properties": {
            "launcherCreationPolicy": desc(
                "When the launcher is created: AtStartup, or WaitForWorkersReady.",
                {"type": "string", "enum": ["AtStartup", "WaitForWorkersReady"], "default": "AtStartup"},
            ),
            "mpiImplementation": desc(
                "The MPI implementation: selects the hostfile format and launcher environment.",
                {"type": "string", "enum": ["OpenMPI", "Intel", "MPICH"], "default": "OpenMPI"},
            ),
            "mpiReplicaSpecs": desc(
                "The Launcher (required) and Worker (optional) replica specs.",
                {
                    "type": "object",
                    "additionalProperties": replica_spec(resolver),
                    "x-kubernetes-validations": [
                        {
                            "rule": "'Launcher' in self",
                            "message": "must have Launcher replica spec",
                            "reason": "FieldValueRequired",
                        },
                        {
                            "rule": "!('Launcher' in self) || !has(self['Launcher'].replicas) "
                            "|| self['Launcher'].replicas == 1",
                            "message": "Launcher replicas must be 1",
                            "fieldPath": "['Launcher'].replicas",
                        },
                        {
                            "rule": "!('Worker' in self) || (has(self['Worker'].replicas) "
                            "&& self['Worker'].replicas >= 1)",
                            "message": "Worker replicas must be greater than or equal to 1",
                            "fieldPath": "['Worker'].replicas",
                        },
                    ],
                },
            ),
            "runLauncherAsWorker": desc(
                "The launcher pod also acts as an MPI host (listed first in the hostfile).",
                {"type": "boolean", "default": False},
            ),
            "runPolicy": run_policy(),
            "slotsPerWorker": desc(
                "Slots per worker written into the hostfile.",
                {"type": "integer", "format": "int32", "minimum": 0, "default": 1},
            ),
            "sshAuthMountPath": desc(
                "Where the SSH secret is mounted in every pod's first container.",
                {"type": "string", "minLength": 1, "default": "/root/.ssh"},
            ),
        },
    }
    return {
        "type": "object",
        "description": "MPIJob runs an MPI program: one launcher and a set of workers.",
        "required": ["spec"],
        "properties": {
            "apiVersion": {"type": "string"},
            "kind": {"type": "string"},
            "metadata": {"type": "object"},
            "spec": spec,
            "status": job_status(),
        },
        "x-kubernetes-validations": [
            {
                "rule": HOSTNAME_RULE,
                "message": "metadata.name: must start with a lower case letter and contain only lower "
                "case alphanumeric characters or '-', and the longest worker hostname "
                "'<name>-worker-<replicas-1>' must be a DNS-1035 label of at most 63 characters",
            }
        ],
    }


def crd(resolver: Resolver) -> Schema:
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "mpijobs.kubeflow.org"},
        "spec": {
            "group": "kubeflow.org",
            "names": {"kind": "MPIJob", "listKind": "MPIJobList", "plural": "mpijobs", "singular": "mpijob"},
            "scope": "Namespaced",
            "versions": [
                {
                    "name": "v2beta1",
                    "served": True,
                    "storage": True,
                    "subresources": {"status": {}, "scale": scale_subresource()},
                    "additionalPrinterColumns": [
                        {"name": "Phase", "type": "string", "jsonPath": ".status.phase"},
                        {"name": "State", "type": "string", "jsonPath": ".status.conditions[-1:].type"},
                        {
                            "name": "Workers",
                            "type": "integer",
                            "jsonPath": ".spec.mpiReplicaSpecs.Worker.replicas",
                        },
                        {"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"},
                        # `-o wide`: the pods as they were at the last status write (aggregate).
                        {
                            "name": "Running",
                            "type": "integer",
                            "jsonPath": ".status.aggregate.running",
                            "priority": 1,
                        },
                        {
                            "name": "Pending",
                            "type": "integer",
                            "jsonPath": ".status.aggregate.pending",
                            "priority": 1,
                        },
                        {
                            "name": "Failed",
                            "type": "integer",
                            "jsonPath": ".status.aggregate.failed",
                            "priority": 1,
                        },
                        progress_column(),
                    ],
                    "schema": {"openAPIV3Schema": mpijob_schema(resolver)},
                }
            ],
        },
    }


def render() -> str:
    document = json.loads(openapi_path().read_text())
    body = yaml.safe_dump(crd(Resolver(document)), sort_keys=False, width=100)
    return "# Generated by hack/gen_crd.py from the Kubernetes OpenAPI document; do not edit.\n---\n" + body


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    check_flag(parser)
    parser.add_argument("--output", type=Path, default=OUTPUT)
    args = parser.parse_args(argv)
    return write_or_check("gen_crd", {args.output: render()}, check=args.check)


if __name__ == "__main__":
    sys.exit(main())
