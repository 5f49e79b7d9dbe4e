"""`kubectl apply -k` of every overlay works, client- and server-side; the committed CRD is what the
generator produces; every example is accepted unchanged."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from mpioperator.testing.cluster import LocalCluster, wait_crd_established
from test.integration.manifests.conftest import EXAMPLES, OVERLAYS, REPO, applied


def test_committed_crd_is_the_generators_output() -> None:
    result = subprocess.run(
        [sys.executable, str(REPO / "hack" / "gen_crd.py"), "--check"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr


def test_generator_check_fails_when_the_crd_was_edited_by_hand(tmp_path: Path) -> None:
    edited = tmp_path / "crd.yaml"
    edited.write_text(
        (REPO / "manifests/base/kubeflow.org_mpijobs.yaml").read_text().replace("OpenMPI", "OpenMPX", 1)
    )
    result = subprocess.run(
        [sys.executable, str(REPO / "hack" / "gen_crd.py"), "--check", "--output", str(edited)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 1
    assert "OpenMPX" in result.stdout


@pytest.mark.parametrize("overlay", OVERLAYS)
@pytest.mark.parametrize("mode", ["client-side", "server-side"])
def test_overlay_applies_and_crd_becomes_established(
    apiserver_cluster: LocalCluster, overlay: str, mode: str
) -> None:
    if overlay == "kubeflow":
        # The kubeflow overlay installs into an existing Kubeflow, whose namespace already exists.
        apiserver_cluster.kubectl("create", "namespace", "kubeflow", check=False)
    printed = applied(apiserver_cluster, mode, "-k", str(REPO / "manifests" / "overlays" / overlay))
    assert "customresourcedefinition.apiextensions.k8s.io/mpijobs.kubeflow.org" in printed
    wait_crd_established(apiserver_cluster, "mpijobs.kubeflow.org")
    names = apiserver_cluster.rest.get(
        "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/mpijobs.kubeflow.org"
    )
    assert names["spec"]["versions"][0]["name"] == "v2beta1"


@pytest.mark.parametrize("example", EXAMPLES, ids=[p.name for p in EXAMPLES])
def test_every_example_applies_unchanged(
    apiserver_cluster: LocalCluster, make_namespace: object, example: Path
) -> None:
    apiserver_cluster.kubectl(
        "apply", "--server-side", "-f", str(REPO / "manifests/base/kubeflow.org_mpijobs.yaml")
    )
    wait_crd_established(apiserver_cluster, "mpijobs.kubeflow.org")
    ns = make_namespace(apiserver_cluster)  # type: ignore[operator]
    result = apiserver_cluster.kubectl("apply", "-n", ns, "-f", str(example), check=False)
    assert result.returncode == 0, result.stderr
    assert "mpijob.kubeflow.org/" in result.stdout
