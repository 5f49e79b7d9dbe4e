"""charts/mpi-operator with the real helm: it lints, refuses values that cannot work with the reason, renders
for a matrix of values into objects the real API server accepts (server-side dry-run, the monitoring kinds
validated against the Prometheus Operator's own CRDs), passes flags the operator parses back to the values,
and its per-namespace RBAC grants exactly the watched namespaces."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
import yaml

from mpioperator.app import options as opts
from mpioperator.testing.cluster import LocalCluster
from mpioperator.testing.helm import CHART, REPO, Helm, HelmError, find_helm, release_leftovers
from mpioperator.testing.operator import service_account_token
from mpioperator.testing.prometheus import install_monitoring_crds
from mpioperator.testing.rest import RestClient
from test.integration.manifests.test_rbac import NEEDED, Access, allowed
from test.unit.manifests.test_operator_probes import PROBES, base_probes

RELEASE_NS = "helm-ops"
WATCHED = ("helm-team-a", "helm-team-b")
UNWATCHED = "helm-team-c"
EVERYTHING: dict[str, Any] = {
    "watchNamespaces": list(WATCHED),
    "gangScheduling": "volcano",
    "threadiness": 8,
    "maxRestartsCap": 7,
    "kubeApi": {"qps": 7.5, "burst": 1000000, "contentType": "application/json"},
    "controllerQueue": {"rateLimit": 20, "burst": 200},
    "clusterDomain": "cluster.local",
    "maxWorkerReplicas": 1000,
    "execAgent": {"enabled": True, "kubectlDeliveryImage": "registry.example/kubectl-delivery:v1"},
    "logFormat": "console",
    "logVerbosity": 4,
    "extraArgs": ["--shutdown-timeout=20"],
    "leaderElection": {"namespace": WATCHED[0], "leaseDuration": 30, "renewDeadline": 20, "retryPeriod": 4},
    "image": {"repository": "registry.example/mpi-operator", "tag": "v1", "pullPolicy": "IfNotPresent"},
    "imagePullSecrets": [{"name": "pull"}],
    "resources": {"requests": {"cpu": "250m", "memory": "256Mi"}},
    "podAnnotations": {"example.com/team": "ml"},
    "podLabels": {"example.com/tier": "control"},
    "nodeSelector": {"kubernetes.io/os": "linux"},
    "tolerations": [{"key": "dedicated", "operator": "Exists", "effect": "NoSchedule"}],
    "priorityClassName": "system-cluster-critical",
    "serviceAccount": {"annotations": {"example.com/role": "operator"}},
    "metrics": {
        "port": 9443,
        "service": {"annotations": {"example.com/scrape": "yes"}},
        "serviceMonitor": {
            "enabled": True,
            "interval": "15s",
            "labels": {"release": "kube-prometheus-stack"},
        },
        "podMonitor": {"enabled": True, "labels": {"release": "kube-prometheus-stack"}},
    },
    "prometheusRule": {"enabled": True, "labels": {"release": "kube-prometheus-stack"}},
    "dashboard": {"enabled": True, "namespace": WATCHED[1], "annotations": {"grafana_folder": "MPI"}},
}
MATRIX: dict[str, dict[str, Any]] = {
    "defaults": {},
    "namespaced": {"watchNamespaces": list(WATCHED)},
    "everything": EVERYTHING,
    "one-replica-no-election": {"replicas": 1, "leaderElection": {"enabled": False}},
    "bring-your-own": {
        "serviceAccount": {"create": False, "name": "existing"},
        "rbac": {"create": False},
        "crds": {"install": False},
        "metrics": {"service": {"enabled": False}},
        "fullnameOverride": "mpi",
    },
}


@pytest.fixture(scope="module")
def helm(tmp_path_factory: pytest.TempPathFactory) -> Helm:
    return Helm(find_helm(), home=tmp_path_factory.mktemp("helm"))


@pytest.fixture(scope="module")
def cluster(apiserver_cluster: LocalCluster) -> LocalCluster:
    install_monitoring_crds(apiserver_cluster)
    for ns in (RELEASE_NS, *WATCHED, UNWATCHED):
        apiserver_cluster.kubectl("create", "namespace", ns, check=False)
    return apiserver_cluster


def by_kind(objects: list[dict[str, Any]], kind: str) -> list[dict[str, Any]]:
    return [o for o in objects if o["kind"] == kind]


def test_chart_lints_clean_in_strict_mode(helm: Helm) -> None:
    result = helm.run("lint", "--strict", str(CHART))
    assert "1 chart(s) linted, 0 chart(s) failed" in result.stdout, result.stdout


@pytest.mark.parametrize(
    ("values", "reason"),
    [
        ({"logFormat": "xml"}, "/logFormat"),
        ({"replica": 3}, "additional properties 'replica' not allowed"),
        ({"replicas": -1}, "/replicas"),
        ({"maxWorkerReplicas": 20204}, "/maxWorkerReplicas"),
        ({"watchNamespaces": ["Team_A"]}, "/watchNamespaces/0"),
        ({"kubeApi": {"qps": 0}}, "/kubeApi/qps"),
        ({"kubeApi": {"contentType": "application/yaml"}}, "/kubeApi/contentType"),
        ({"metrics": {"serviceMonitor": {"interval": "often"}}}, "/metrics/serviceMonitor/interval"),
        (
            {"replicas": 2, "leaderElection": {"enabled": False}},
            "replicas > 1 needs leaderElection.enabled",
        ),
        ({"leaderElection": {"renewDeadline": 20}}, "leaseDuration must be greater than"),
        ({"leaderElection": {"retryPeriod": 4.5}}, "renewDeadline must be greater than 1.2 x"),
        ({"metrics": {"port": 8080}}, "metrics.port and healthPort must differ"),
        (
            {"metrics": {"service": {"enabled": False}, "serviceMonitor": {"enabled": True}}},
            "metrics.serviceMonitor needs metrics.service.enabled",
        ),
        ({"serviceAccount": {"create": False}}, "serviceAccount.name is required"),
    ],
)
def test_values_that_cannot_work_are_refused_with_the_reason(
    helm: Helm, values: dict[str, Any], reason: str
) -> None:
    with pytest.raises(HelmError) as refused:
        helm.template("r", RELEASE_NS, values)
    assert reason in refused.value.stderr


@pytest.mark.parametrize("case", sorted(MATRIX))
def test_rendered_objects_are_accepted_by_the_api_server(
    cluster: LocalCluster, helm: Helm, case: str
) -> None:
    objects = helm.template(f"dry-{case}", RELEASE_NS, MATRIX[case])
    rendered = yaml.safe_dump_all(objects)
    result = cluster.kubectl(
        "apply",
        "--server-side",
        "--force-conflicts",
        "--dry-run=server",
        "-f",
        "-",
        input=rendered,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    applied = [line for line in result.stdout.splitlines() if line.endswith("(server dry run)")]
    assert len(applied) == len(objects), result.stdout


def test_every_option_reaches_the_operator_as_a_flag_it_parses_back_to_the_value(helm: Helm) -> None:
    objects = helm.template("flags", RELEASE_NS, EVERYTHING)
    (deployment,) = by_kind(objects, "Deployment")
    (container,) = deployment["spec"]["template"]["spec"]["containers"]
    parsed = opts.parse(container["args"], environ={})
    assert parsed.namespaces == WATCHED
    assert (parsed.threadiness, parsed.kube_api_qps, parsed.kube_api_burst) == (8, 7.5, 1000000)
    assert parsed.max_restarts_cap == 7
    assert parsed.kube_api_content_type == "application/json"
    assert (parsed.controller_queue_rate_limit, parsed.controller_queue_burst) == (20, 200)
    assert parsed.gang_scheduling == "volcano"
    assert parsed.cluster_domain == "cluster.local"
    assert parsed.max_worker_replicas == 1000
    assert parsed.exec_agent and parsed.kubectl_delivery_image == "registry.example/kubectl-delivery:v1"
    assert (parsed.log_format, parsed.verbosity, parsed.shutdown_timeout) == ("console", 4, 20.0)
    assert parsed.leader_elect and parsed.lock_namespace == WATCHED[0]
    assert (parsed.lease_duration, parsed.renew_deadline, parsed.retry_period) == (30, 20, 4)
    assert (parsed.monitoring_port, parsed.health_port) == (9443, 8080)
    assert container["image"] == "registry.example/mpi-operator:v1"
    assert parsed.host_waiter_image == container["image"]  # the launchers' waiter runs the same image
    ports = {p["name"]: p["containerPort"] for p in container["ports"]}
    assert ports == {"health": 8080, "metrics": 9443}

    (plain,) = by_kind(helm.template("d", RELEASE_NS), "Deployment")
    defaults = opts.parse(plain["spec"]["template"]["spec"]["containers"][0]["args"], environ={})
    assert defaults.cluster_scoped and defaults.leader_elect and defaults.lock_namespace == RELEASE_NS
    assert not defaults.exec_agent
    assert defaults.max_worker_replicas == opts.Options().max_worker_replicas  # derived, not set
    assert defaults.max_restarts_cap == 100


def test_the_exec_agent_adds_the_kustomize_components_rules_and_only_when_enabled(helm: Helm) -> None:
    component = yaml.safe_load_all((REPO / "manifests/components/exec-agent/cluster-role.yaml").read_text())
    wanted = next(doc for doc in component if doc["kind"] == "ClusterRole")["rules"]

    def rules(values: dict[str, Any]) -> list[dict[str, Any]]:
        objects = helm.template("rbac", RELEASE_NS, values)
        (role,) = [
            o
            for o in by_kind(objects, "ClusterRole")
            if not o["metadata"]["name"].endswith("-edit") and not o["metadata"]["name"].endswith("-view")
        ]
        found: list[dict[str, Any]] = role["rules"]
        return found

    with_agent = rules({"execAgent": {"enabled": True}})
    assert all(rule in with_agent for rule in wanted)
    assert not any("pods/exec" in rule["resources"] for rule in rules({}))


def test_rendered_crd_is_the_generated_crd(helm: Helm) -> None:
    (crd,) = by_kind(helm.template("crd", RELEASE_NS), "CustomResourceDefinition")
    generated = yaml.safe_load((REPO / "manifests/base/kubeflow.org_mpijobs.yaml").read_text())
    assert crd["spec"] == generated["spec"]
    assert crd["metadata"]["annotations"] == {"helm.sh/resource-policy": "keep"}
    (dropped,) = by_kind(
        helm.template("crd", RELEASE_NS, {"crds": {"keep": False}}), "CustomResourceDefinition"
    )
    assert "annotations" not in dropped["metadata"]


def test_monitoring_objects_select_the_metrics_endpoints_and_carry_the_dashboard_and_rules(
    helm: Helm,
) -> None:
    objects = helm.template("mon", RELEASE_NS, EVERYTHING)
    (service,) = by_kind(objects, "Service")
    (deployment,) = by_kind(objects, "Deployment")
    pod_labels = deployment["spec"]["template"]["metadata"]["labels"]
    assert service["spec"]["selector"].items() <= pod_labels.items()
    (monitor,) = by_kind(objects, "ServiceMonitor")
    assert monitor["spec"]["selector"]["matchLabels"].items() <= service["metadata"]["labels"].items()
    assert monitor["spec"]["endpoints"][0]["relabelings"] == [
        {"targetLabel": "job", "replacement": "mpi-operator"}
    ]
    (pod_monitor,) = by_kind(objects, "PodMonitor")
    assert pod_monitor["spec"]["selector"]["matchLabels"].items() <= pod_labels.items()
    (dashboard,) = by_kind(objects, "ConfigMap")
    assert dashboard["metadata"]["namespace"] == WATCHED[1]
    assert dashboard["metadata"]["labels"]["grafana_dashboard"] == "1"
    component = REPO / "manifests/components/prometheus"
    assert dashboard["data"]["mpi-operator.json"] == (component / "dashboard.json").read_text().rstrip("\n")
    (rule,) = by_kind(objects, "PrometheusRule")
    assert rule["spec"] == yaml.safe_load((component / "prometheus-rule.yaml").read_text())["spec"]


@pytest.fixture
def namespaced_release(cluster: LocalCluster, helm: Helm) -> Iterator[RestClient]:
    """A release serving WATCHED only, installed for real (its CRD left to the session's other tests);
    the client holds a token of its ServiceAccount."""
    release = "rbac"
    values = {"watchNamespaces": list(WATCHED), "crds": {"install": False}}
    helm_for_cluster = Helm(helm.binary, kubeconfig=cluster.kubeconfig, home=helm.home)
    helm_for_cluster.install(release, RELEASE_NS, values)
    objects = helm_for_cluster.manifest(release, RELEASE_NS)
    token = service_account_token(cluster, RELEASE_NS, f"{release}-mpi-operator")
    try:
        yield RestClient(cluster.server, token=token, ca_file=cluster.ca_file)
    finally:
        helm_for_cluster.uninstall(release, RELEASE_NS)
        assert release_leftovers(cluster, release, objects) == []


def in_namespace(access: Access, namespace: str) -> Access:
    """The same access in `namespace`; cluster-scoped accesses stay as they are."""
    return access._replace(namespace=namespace) if access.namespace else access


def test_a_namespaced_release_grants_the_watched_namespaces_and_nothing_else(
    namespaced_release: RestClient,
) -> None:
    # The Lease is granted in the lock namespace (the release's), not in the watched ones.
    needed = [a for a in NEEDED if a.resource != "leases"]
    wanted = {str(in_namespace(a, ns)): in_namespace(a, ns) for ns in WATCHED for a in needed}
    assert [name for name, access in wanted.items() if not allowed(namespaced_release, access)] == []
    lease = Access("update", "leases", "coordination.k8s.io", namespace=RELEASE_NS, name="mpi-operator")
    assert allowed(namespaced_release, lease)
    elsewhere = [in_namespace(a, UNWATCHED) for a in needed if a.namespace]
    assert [str(a) for a in elsewhere if allowed(namespaced_release, a)] == []


def test_the_deployments_probes_are_the_kustomize_bases(helm: Helm) -> None:
    (deployment,) = by_kind(helm.template("probes", RELEASE_NS), "Deployment")
    (container,) = deployment["spec"]["template"]["spec"]["containers"]
    assert {name: container.get(name) for name in PROBES} == base_probes()
