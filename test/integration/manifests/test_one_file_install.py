"""deploy/v2beta1/mpi-operator.yaml is the standalone overlay rendered (a stale copy fails here), and it
applies as it is, client- and server-side."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from mpioperator.testing.cluster import LocalCluster, wait_crd_established
from test.integration.manifests.conftest import REPO, applied

ONE_FILE = REPO / "deploy" / "v2beta1" / "mpi-operator.yaml"
GENERATOR = REPO / "hack" / "gen_install.py"


def run_generator(*args: str, kubectl: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(GENERATOR), "--kubectl", kubectl, *args],
        capture_output=True,
        text=True,
        check=False,
    )


def test_committed_one_file_install_is_the_standalone_overlay_rendered(
    apiserver_cluster: LocalCluster,
) -> None:
    result = run_generator("--check", kubectl=apiserver_cluster.binaries.path("kubectl"))
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr


def test_generator_check_fails_when_the_overlay_changed_after_generating(
    apiserver_cluster: LocalCluster, tmp_path: Path
) -> None:
    stale = tmp_path / "mpi-operator.yaml"
    stale.write_text(ONE_FILE.read_text().replace("--log-format=json", "--log-format=console", 1))
    result = run_generator(
        "--check", "--output", str(stale), kubectl=apiserver_cluster.binaries.path("kubectl")
    )
    assert result.returncode == 1
    assert "+        - --log-format=json" in result.stdout
    assert "is stale" in result.stderr


def test_one_file_install_holds_the_namespace_crd_rbac_and_deployment_all_in_mpi_operator() -> None:
    documents = [d for d in yaml.safe_load_all(ONE_FILE.read_text()) if d]
    kinds = {(d["kind"], d["metadata"]["name"]): d["metadata"].get("namespace") for d in documents}
    assert kinds[("Namespace", "mpi-operator")] is None
    assert kinds[("CustomResourceDefinition", "mpijobs.kubeflow.org")] is None
    for namespaced in ("ServiceAccount", "Role", "RoleBinding", "Deployment"):
        found = [ns for (kind, _), ns in kinds.items() if kind == namespaced]
        assert found and set(found) == {"mpi-operator"}, (namespaced, found)
    # The Namespace comes first, so a single apply can create what lives in it.
    assert documents[0]["kind"] == "Namespace"


@pytest.mark.parametrize("mode", ["client-side", "server-side"])
def test_one_file_install_applies_as_it_is(apiserver_cluster: LocalCluster, mode: str) -> None:
    assert "deployment.apps/mpi-operator" in applied(apiserver_cluster, mode, "-f", str(ONE_FILE))
    wait_crd_established(apiserver_cluster, "mpijobs.kubeflow.org")
    deployment = apiserver_cluster.rest.get("/apis/apps/v1/namespaces/mpi-operator/deployments/mpi-operator")
    assert (
        "--lock-namespace=$(POD_NAMESPACE)" in deployment["spec"]["template"]["spec"]["containers"][0]["args"]
    )
