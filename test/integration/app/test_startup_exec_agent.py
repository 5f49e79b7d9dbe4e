"""With --exec-agent the operator checks at start-up that it holds what the agent needs (pods/exec, and
the rights on the per-job ServiceAccount, Role and RoleBinding), and refuses to start in one line naming
the missing rights otherwise, instead of holding every opted-in job on the API server's refusals."""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

import yaml

from mpioperator.app import options as opts
from mpioperator.app.startup import check_cluster
from mpioperator.kube.client import KubeClient
from mpioperator.testing.cluster import LocalCluster
from mpioperator.testing.operator import service_account_token
from mpioperator.testing.pki import write_kubeconfig
from mpioperator.testing.wait import wait_for
from test.integration.app.test_startup_failures import last_line, run_operator

REPO = Path(__file__).resolve().parents[3]
BASE_ROLE = REPO / "manifests" / "base" / "cluster-role.yaml"
EXEC_AGENT_ROLE = REPO / "manifests" / "components" / "exec-agent" / "cluster-role.yaml"
RBAC = "/apis/rbac.authorization.k8s.io/v1"


def grant(cluster: LocalCluster, manifest: Path, ns: str, account: str, *probe: str) -> None:
    """The manifest's first ClusterRole, under a name of its own, bound to the ServiceAccount; returns
    once the authorizer answers `kubectl auth can-i <probe>` for the account with yes."""
    role: dict[str, Any] = next(
        d for d in yaml.safe_load_all(manifest.read_text()) if d["kind"] == "ClusterRole"
    )
    name = f"{role['metadata']['name']}-{uuid.uuid4().hex[:6]}"
    role["metadata"] = {"name": name}
    cluster.rest.create(f"{RBAC}/clusterroles", role)
    binding = {
        "metadata": {"name": name},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": name},
        "subjects": [{"kind": "ServiceAccount", "name": account, "namespace": ns}],
    }
    cluster.rest.create(f"{RBAC}/clusterrolebindings", binding)
    user = f"--as=system:serviceaccount:{ns}:{account}"
    wait_for(
        lambda: cluster.kubectl("auth", "can-i", *probe, "-n", ns, user, check=False).stdout.startswith(
            "yes"
        ),
        timeout=30,
        what=f"RBAC to allow {account} to {' '.join(probe)}",
    )


def operator_kubeconfig(cluster: LocalCluster, ns: str, tmp_path: Path) -> Path:
    cluster.rest.create(f"/api/v1/namespaces/{ns}/serviceaccounts", {"metadata": {"name": "operator"}})
    token = service_account_token(cluster, ns, "operator")
    return write_kubeconfig(tmp_path / "kc", server=cluster.server, ca_file=cluster.ca_file, token=token)


def test_exec_agent_without_its_rights_exits_with_one_line_naming_them(
    with_mpijobs: LocalCluster, make_namespace: Any, tmp_path: Path
) -> None:
    ns = make_namespace(with_mpijobs)
    kubeconfig = operator_kubeconfig(with_mpijobs, ns, tmp_path)
    grant(with_mpijobs, BASE_ROLE, ns, "operator", "list", "mpijobs.kubeflow.org")

    result = run_operator(f"--kubeConfig={kubeconfig}", f"--namespace={ns}", "--exec-agent")

    assert result.returncode == 1
    line = last_line(result)
    assert "--exec-agent needs the rights to create pods/exec" in line
    assert "create serviceaccounts" in line and "update rolebindings.rbac.authorization.k8s.io" in line
    assert f"in namespace {ns}" in line and "manifests/components/exec-agent" in line
    assert "Traceback" not in result.stderr


async def test_exec_agent_with_the_components_role_passes_the_start_up_checks(
    with_mpijobs: LocalCluster, make_namespace: Any, tmp_path: Path
) -> None:
    ns = make_namespace(with_mpijobs)
    kubeconfig = operator_kubeconfig(with_mpijobs, ns, tmp_path)
    grant(with_mpijobs, BASE_ROLE, ns, "operator", "list", "mpijobs.kubeflow.org")
    grant(with_mpijobs, EXEC_AGENT_ROLE, ns, "operator", "create", "pods", "--subresource=exec")
    options = opts.parse([f"--kubeConfig={kubeconfig}", f"--namespace={ns}", "--exec-agent"], environ={})

    client = KubeClient.from_kubeconfig(str(kubeconfig), user_agent="test")
    try:
        await check_cluster(client, options)  # raises StartupError naming what is missing
    finally:
        await client.close()
