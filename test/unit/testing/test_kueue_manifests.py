"""The transforms that run Kueue's published manifests beside a local API server, and Kueue's objects."""

from __future__ import annotations

import base64
import subprocess
from pathlib import Path
from typing import Any

import yaml

from mpioperator.testing import kueue_objects
from mpioperator.testing.kueue_manifests import configuration, overlay_argv, webhook_configurations


def _hook(name: str, path: str) -> dict[str, Any]:
    return {
        "name": name,
        "clientConfig": {"service": {"name": "webhook-service", "namespace": "system", "path": path}},
        "failurePolicy": "Fail",
        "rules": [{"operations": ["CREATE"]}],
    }


PUBLISHED = [
    {
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "MutatingWebhookConfiguration",
        "metadata": {"name": "mutating-webhook-configuration"},
        "webhooks": [
            _hook("mclusterqueue.kb.io", "/mutate-kueue-x-k8s-io-v1beta2-clusterqueue"),
            _hook("mjob.kb.io", "/mutate-batch-v1-job"),
            _hook("mmpijob.kb.io", "/mutate-kubeflow-org-v2beta1-mpijob"),
            _hook("mpod.kb.io", "/mutate--v1-pod"),
            _hook("mpytorchjob.kb.io", "/mutate-kubeflow-org-v1-pytorchjob"),
        ],
    },
    None,
    {
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "ValidatingWebhookConfiguration",
        "metadata": {"name": "validating-webhook-configuration"},
        "webhooks": [
            _hook("vdeployment.kb.io", "/validate-apps-v1-deployment"),
            _hook("vmpijob.kb.io", "/validate-kubeflow-org-v2beta1-mpijob"),
            _hook("vworkload.kb.io", "/validate-kueue-x-k8s-io-v1beta2-workload"),
        ],
    },
]


def test_only_the_hooks_for_kueue_objects_and_mpijobs_are_kept() -> None:
    configs = webhook_configurations(PUBLISHED, port=9443, ca_pem=b"pem")
    kept = {c["kind"]: [h["name"] for h in c["webhooks"]] for c in configs}
    assert kept == {
        "MutatingWebhookConfiguration": ["mclusterqueue.kb.io", "mmpijob.kb.io"],
        "ValidatingWebhookConfiguration": ["vmpijob.kb.io", "vworkload.kb.io"],
    }


def test_kept_hooks_call_loopback_urls_verified_by_our_ca() -> None:
    configs = webhook_configurations(PUBLISHED, port=40123, ca_pem=b"-----BEGIN CERTIFICATE-----\n")
    hook = configs[0]["webhooks"][1]
    assert hook["clientConfig"] == {
        "url": "https://127.0.0.1:40123/mutate-kubeflow-org-v2beta1-mpijob",
        "caBundle": base64.b64encode(b"-----BEGIN CERTIFICATE-----\n").decode(),
    }
    assert hook["failurePolicy"] == "Fail"
    assert [c["metadata"]["name"] for c in configs] == [
        "kueue-mutating-webhook-configuration",
        "kueue-validating-webhook-configuration",
    ]


def test_the_published_documents_are_left_as_they_were() -> None:
    before = yaml.safe_dump_all(PUBLISHED)
    webhook_configurations(PUBLISHED, port=1, ca_pem=b"x")
    assert yaml.safe_dump_all(PUBLISHED) == before


def test_configuration_serves_on_loopback_with_our_certificates_and_manages_only_queued_mpijobs() -> None:
    config = configuration(webhook_port=9443, health_port=8081, cert_dir=Path("/certs"))
    assert config["webhook"] == {"host": "127.0.0.1", "port": 9443, "certDir": "/certs"}
    assert config["health"]["healthProbeBindAddress"] == "127.0.0.1:8081"
    assert config["internalCertManagement"] == {"enable": False}
    assert config["integrations"]["frameworks"] == ["kubeflow.org/mpijob"]
    assert config["manageJobsWithoutQueueName"] is False
    assert config["featureGates"] == {"VisibilityOnDemand": False}


def test_configuration_turns_wait_for_pods_ready_on_with_a_short_timeout_and_backoff() -> None:
    config = configuration(webhook_port=1, health_port=2, cert_dir=Path("/c"))
    assert config["waitForPodsReady"] == {
        "timeout": "30s",
        "blockAdmission": False,
        "requeuingStrategy": {"timestamp": "Eviction", "backoffBaseSeconds": 1, "backoffMaxSeconds": 10},
    }


def test_configuration_overrides_merge_into_nested_settings() -> None:
    config = configuration(
        webhook_port=1,
        health_port=2,
        cert_dir=Path("/c"),
        overrides={"featureGates": {"MultiKueueBatchJobWithManagedBy": True}, "multiKueue": {"origin": "m"}},
    )
    assert config["featureGates"] == {"VisibilityOnDemand": False, "MultiKueueBatchJobWithManagedBy": True}
    assert config["multiKueue"] == {"origin": "m"}
    assert config["webhook"]["port"] == 1


def test_the_overlay_wrapper_runs_the_command_with_its_words_intact(tmp_path: Path) -> None:
    # The script is run by sh with `mount` replaced by a stub, so only the argument passing is exercised.
    stub = tmp_path / "bin"
    stub.mkdir()
    (stub / "mount").write_text('#!/bin/sh\necho "mount $*"\n')
    (stub / "mount").chmod(0o755)
    argv = overlay_argv(["printf", "[%s]", "a b", "$HOME"], upper=tmp_path / "u", work=tmp_path / "w")
    assert argv[:4] == ["unshare", "--mount", "--propagation", "private"]
    result = subprocess.run(
        argv[4:], capture_output=True, text=True, check=True, env={"PATH": f"{stub}:/usr/bin:/bin"}
    )
    assert result.stdout.splitlines() == [
        f"mount -t overlay overlay -o lowerdir=/etc,upperdir={tmp_path}/u,workdir={tmp_path}/w /etc",
        "[a b][$HOME]",
    ]


def test_cluster_queue_covers_every_resource_its_flavors_name() -> None:
    queue = kueue_objects.cluster_queue(
        "cq",
        quotas={"a": {"cpu": "3", "memory": "1Gi"}, "b": {"cpu": "1", "memory": "2Gi"}},
        preemption={"withinClusterQueue": "LowerPriority"},
    )
    group = queue["spec"]["resourceGroups"][0]
    assert group["coveredResources"] == ["cpu", "memory"]
    assert group["flavors"][1] == {
        "name": "b",
        "resources": [{"name": "cpu", "nominalQuota": "1"}, {"name": "memory", "nominalQuota": "2Gi"}],
    }
    assert queue["spec"]["preemption"] == {"withinClusterQueue": "LowerPriority"}
    assert queue["apiVersion"] == "kueue.x-k8s.io/v1beta2"


def test_queued_labels_a_job_for_its_queue_and_priority() -> None:
    job: dict[str, Any] = {"metadata": {"name": "j", "labels": {"app": "x"}}}
    kueue_objects.queued(job, "lq", priority_class="high")
    assert job["metadata"]["labels"] == {
        "app": "x",
        kueue_objects.QUEUE_NAME_LABEL: "lq",
        kueue_objects.PRIORITY_CLASS_LABEL: "high",
    }


def test_object_paths_name_the_kind_plural_and_namespace() -> None:
    assert kueue_objects.path("ClusterQueue", "cq") == "/apis/kueue.x-k8s.io/v1beta2/clusterqueues/cq"
    assert (
        kueue_objects.path("Workload", namespace="ns")
        == "/apis/kueue.x-k8s.io/v1beta2/namespaces/ns/workloads"
    )
