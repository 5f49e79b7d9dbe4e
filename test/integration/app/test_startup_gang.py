"""With gang scheduling on, the operator refuses to start, in one line, when the PodGroup CRD is missing."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from mpioperator.testing.cluster import LocalCluster, wait_crd_established
from test.integration.app.test_startup_failures import last_line, run_operator

MPIJOB_CRD = Path(__file__).resolve().parents[3] / "manifests" / "base" / "kubeflow.org_mpijobs.yaml"


@pytest.fixture(scope="module")
def mpijobs_only() -> Iterator[LocalCluster]:
    """An API server that serves MPIJobs but no PodGroup kind (the session cluster may have both)."""
    with LocalCluster(tier="apiserver") as cluster:
        cluster.kubectl("apply", "--server-side", "-f", str(MPIJOB_CRD))
        wait_crd_established(cluster, "mpijobs.kubeflow.org")
        yield cluster


@pytest.mark.parametrize(
    ("flag", "crd"),
    [
        ("volcano", "podgroups.scheduling.volcano.sh"),
        ("scheduler-plugins-scheduler", "podgroups.scheduling.x-k8s.io"),
    ],
)
def test_gang_scheduling_without_its_pod_group_crd_exits_with_one_line(
    mpijobs_only: LocalCluster, flag: str, crd: str
) -> None:
    result = run_operator(f"--kubeConfig={mpijobs_only.kubeconfig}", f"--gang-scheduling={flag}")
    assert result.returncode == 1
    line = last_line(result)
    assert crd in line and "not serve" in line and "--gang-scheduling" in line
    assert "Traceback" not in result.stderr


def test_kubernetes_gang_scheduling_without_the_workload_api_exits_naming_the_feature_gates(
    mpijobs_only: LocalCluster,
) -> None:
    result = run_operator(f"--kubeConfig={mpijobs_only.kubeconfig}", "--gang-scheduling=GangScheduling")
    assert result.returncode == 1
    line = last_line(result)
    assert "podgroups.scheduling.k8s.io/v1alpha2" in line and "not serve" in line
    assert "GenericWorkload=true,GangScheduling=true" in line
    assert "--runtime-config=scheduling.k8s.io/v1alpha2=true" in line
    assert "Traceback" not in result.stderr


def test_the_operator_process_runs_on_uvloop(mpijobs_only: LocalCluster) -> None:
    """The command users run starts its event loop from uvloop (its start-up line says which), whatever
    then stops it: here the missing PodGroup CRD, after that line."""
    result = run_operator(f"--kubeConfig={mpijobs_only.kubeconfig}", "--gang-scheduling=volcano")
    starting = [json.loads(line) for line in result.stderr.splitlines() if '"starting"' in line]
    assert [record["event_loop"] for record in starting] == ["uvloop"], result.stderr[-2000:]
