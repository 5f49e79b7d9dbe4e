"""The operator refuses to start, with one clear line and a non-zero exit, when it cannot work."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from mpioperator.testing.cluster import LocalCluster
from mpioperator.testing.operator import operator_command, service_account_token
from mpioperator.testing.pki import write_kubeconfig


def run_operator(*args: str, timeout: float = 90) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*operator_command(), "--leader-elect=false", "--health-port=0", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
        env={k: v for k, v in os.environ.items() if k != "KUBECONFIG"},
    )


def last_line(result: subprocess.CompletedProcess[str]) -> str:
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    return lines[-1] if lines else ""


@pytest.mark.parametrize(
    ("flag", "words"),
    [
        ("--threadiness=0", "threadiness"),
        ("--monitoring-port=70000", "monitoring-port"),
        ("--kube-api-qps=-1", "kube-api-qps"),
    ],
)
def test_bad_flag_values_exit_non_zero_with_one_line_naming_the_flag(flag: str, words: str) -> None:
    result = run_operator(flag)
    assert result.returncode != 0
    assert words in last_line(result)
    assert "Traceback" not in result.stderr


def test_unknown_flag_is_rejected() -> None:
    result = run_operator("--no-such-flag=1")
    assert result.returncode != 0
    assert "no-such-flag" in result.stderr


@pytest.fixture(scope="module")
def bare_cluster() -> Iterator[LocalCluster]:
    """An API server without the MPIJob CRD (the session cluster has it installed)."""
    with LocalCluster(tier="apiserver") as cluster:
        yield cluster


def test_missing_crd_exits_with_one_line(bare_cluster: LocalCluster) -> None:
    result = run_operator(f"--kubeConfig={bare_cluster.kubeconfig}")
    assert result.returncode == 1
    assert "MPIJob CRD" in last_line(result) and "not served" in last_line(result)
    assert "Traceback" not in result.stderr


def test_missing_rbac_exits_with_one_line(bare_cluster: LocalCluster, tmp_path: Path) -> None:
    bare_cluster.rest.create("/api/v1/namespaces", {"metadata": {"name": "nobody"}})
    bare_cluster.rest.create("/api/v1/namespaces/nobody/serviceaccounts", {"metadata": {"name": "nobody"}})
    token = service_account_token(bare_cluster, "nobody", "nobody")
    kubeconfig = write_kubeconfig(
        tmp_path / "kc", server=bare_cluster.server, ca_file=bare_cluster.ca_file, token=token
    )
    result = run_operator(f"--kubeConfig={kubeconfig}")
    assert result.returncode == 1
    assert "not allowed to list" in last_line(result)
    assert "Traceback" not in result.stderr
