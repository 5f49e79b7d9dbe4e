"""The MultiKueue objects the harness writes: the worker's grant, the manager's Secret, cluster, config and
admission check, and the inline kubeconfig Kueue accepts."""

from __future__ import annotations

import base64
from typing import Any

import yaml

from mpioperator.testing.kueue_manifests import NAMESPACE as KUEUE_NAMESPACE
from mpioperator.testing.multikueue import (
    KUBECONFIG_KEY,
    is_active,
    manager_objects,
    worker_access,
)
from mpioperator.testing.pki import inline_kubeconfig

CA_PEM = b"-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n"
# Kubeconfig keys MultiKueue refuses (its kubeconfig validation): every one names a file, skips TLS
# checks or runs something.
REFUSED_KEYS = {
    "certificate-authority",
    "insecure-skip-tls-verify",
    "tokenFile",
    "client-certificate",
    "client-key",
    "exec",
    "auth-provider",
    "username",
    "password",
}


def _keys(node: Any) -> set[str]:
    if isinstance(node, dict):
        return set(node) | {k for value in node.values() for k in _keys(value)}
    if isinstance(node, list):
        return {k for item in node for k in _keys(item)}
    return set()


def _by_kind(objects: list[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    kinds: dict[str, list[dict[str, Any]]] = {}
    for obj in objects:
        kinds.setdefault(obj["kind"], []).append(obj)
    return kinds


def test_inline_kubeconfig_carries_the_ca_and_token_as_data_and_names_no_file() -> None:
    config: dict[str, Any] = inline_kubeconfig(server="https://127.0.0.1:6443", ca_pem=CA_PEM, token="tok")
    assert not _keys(config) & REFUSED_KEYS
    (cluster,) = config["clusters"]
    assert cluster["cluster"]["server"] == "https://127.0.0.1:6443"
    assert base64.b64decode(cluster["cluster"]["certificate-authority-data"]) == CA_PEM
    (user,) = config["users"]
    assert user["user"] == {"token": "tok"}
    (context,) = config["contexts"]
    assert config["current-context"] == context["name"]
    assert context["context"]["cluster"] == cluster["name"] and context["context"]["user"] == user["name"]


def test_worker_grants_one_service_account_multikueues_rights_on_workloads_and_mpijobs_only() -> None:
    kinds = _by_kind(worker_access(account="mk"))
    (account,) = kinds["ServiceAccount"]
    assert account["metadata"] == {"name": "mk", "namespace": KUEUE_NAMESPACE}
    (role,) = kinds["ClusterRole"]
    (binding,) = kinds["ClusterRoleBinding"]
    assert binding["roleRef"]["name"] == role["metadata"]["name"]
    assert binding["subjects"] == [{"kind": "ServiceAccount", "name": "mk", "namespace": KUEUE_NAMESPACE}]
    verbs = {
        f"{group}/{resource}": set(rule["verbs"])
        for rule in role["rules"]
        for group in rule["apiGroups"]
        for resource in rule["resources"]
    }
    assert {"create", "delete", "watch", "update"} <= verbs["kueue.x-k8s.io/workloads"]
    assert {"create", "delete", "get", "list", "watch"} <= verbs["kubeflow.org/mpijobs"]
    assert verbs["kubeflow.org/mpijobs/status"] == {"get"}
    assert not any(key.startswith(("/", "batch/", "apps/")) for key in verbs), "no pods, Jobs or core kinds"


def test_manager_objects_link_secret_cluster_config_and_admission_check() -> None:
    kubeconfig = inline_kubeconfig(server="https://127.0.0.1:1", ca_pem=CA_PEM, token="t")
    kinds = _by_kind(manager_objects(workers={"worker1": kubeconfig}, config="mk", check="mk-ac"))
    (secret,) = kinds["Secret"]
    assert secret["metadata"]["namespace"] == KUEUE_NAMESPACE
    assert yaml.safe_load(base64.b64decode(secret["data"][KUBECONFIG_KEY])) == kubeconfig
    (cluster,) = kinds["MultiKueueCluster"]
    assert cluster["metadata"]["name"] == "worker1"
    assert cluster["spec"]["clusterSource"]["kubeConfig"] == {
        "locationType": "Secret",
        "location": secret["metadata"]["name"],
    }
    (config,) = kinds["MultiKueueConfig"]
    assert config["metadata"]["name"] == "mk" and config["spec"]["clusters"] == ["worker1"]
    (check,) = kinds["AdmissionCheck"]
    assert check["metadata"]["name"] == "mk-ac"
    assert check["spec"]["controllerName"] == "kueue.x-k8s.io/multikueue"
    assert check["spec"]["parameters"] == {
        "apiGroup": "kueue.x-k8s.io",
        "kind": "MultiKueueConfig",
        "name": "mk",
    }
    assert all(o["apiVersion"] == "kueue.x-k8s.io/v1beta2" for o in (cluster, config, check))


def test_manager_objects_list_every_worker_in_one_config() -> None:
    kinds = _by_kind(manager_objects(workers={"a": {}, "b": {}}, config="mk", check="ac"))
    assert [c["metadata"]["name"] for c in kinds["MultiKueueCluster"]] == ["a", "b"]
    assert len({s["metadata"]["name"] for s in kinds["Secret"]}) == 2
    assert kinds["MultiKueueConfig"][0]["spec"]["clusters"] == ["a", "b"]


def test_active_means_kueues_active_condition_is_true() -> None:
    def with_conditions(*conditions: dict[str, str]) -> dict[str, Any]:
        return {"status": {"conditions": list(conditions)}}

    assert is_active(with_conditions({"type": "Active", "status": "True"}))
    assert not is_active(
        with_conditions({"type": "Active", "status": "False", "reason": "ClientConnectionFailed"})
    )
    assert not is_active(with_conditions({"type": "Other", "status": "True"}))
    assert not is_active({})
