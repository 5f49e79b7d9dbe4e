"""The one-file install as a user applies it, its Deployment really running the operator image on the real
node, and pi driven through it by `kubectl mpijob` (submit, wait, logs, logs -f) and by README's SDK
example, run as written."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

from mpioperator.testing.cluster import LocalCluster, wait_crd_established
from mpioperator.testing.install import OPERATOR_NAMESPACE, install_manifests, wait_deployment_ready
from mpioperator.testing.wait import wait_for
from test.integration.client.conftest import kubeconfig_with_namespace, run_cli
from test.real.test_real_mpijobs import assert_computed_pi, assert_pi_ran_where_the_hostfile_says

REPO = Path(__file__).resolve().parents[2]
ONE_FILE = REPO / "deploy" / "v2beta1" / "mpi-operator.yaml"
PI_EXAMPLE = REPO / "examples" / "v2beta1" / "pi" / "pi.yaml"
README_EXAMPLE = re.compile(r"<!-- sdk-example -->\n```python\n(.*?)```", re.DOTALL)


def readme_sdk_example() -> str:
    found = README_EXAMPLE.search((REPO / "README.md").read_text())
    assert found, "README.md lost its SDK example (marked <!-- sdk-example -->)"
    return found.group(1)


def operator_pods(cluster: LocalCluster) -> list[dict[str, Any]]:
    path = f"/api/v1/namespaces/{OPERATOR_NAMESPACE}/pods?labelSelector=app=mpi-operator"
    items: list[dict[str, Any]] = cluster.rest.get(path)["items"]
    return items


def test_one_file_install_runs_pi_driven_by_the_cli_and_by_the_readme_sdk_example(
    real_cluster: LocalCluster, make_namespace: Any, tmp_path: Path
) -> None:
    applied = real_cluster.kubectl(
        "apply", "--server-side", "--force-conflicts", "-f", str(ONE_FILE), check=False
    )
    assert applied.returncode == 0, applied.stderr
    try:
        wait_crd_established(real_cluster, "mpijobs.kubeflow.org")
        wait_deployment_ready(real_cluster, OPERATOR_NAMESPACE)

        ns = make_namespace(real_cluster)
        submitted = run_cli(real_cluster, "submit", "-f", str(PI_EXAMPLE), "-n", ns)
        assert submitted.stdout == "mpijob.kubeflow.org/pi created\n", submitted.stderr
        waited = run_cli(real_cluster, "wait", "pi", "-n", ns, "--timeout", "240")
        print(f"$ kubectl mpijob wait pi\n{waited.stdout}{waited.stderr}")
        assert waited.returncode == 0, waited.stdout + waited.stderr
        assert waited.stdout.splitlines()[-1].startswith("pi: Succeeded")
        logs = run_cli(real_cluster, "logs", "pi", "-n", ns)
        assert logs.returncode == 0, logs.stderr
        assert_pi_ran_where_the_hostfile_says(real_cluster, ns, "pi", logs.stdout, ranks=2)
        # The launcher has ended, so following its log gives the whole log and returns.
        followed = run_cli(real_cluster, "logs", "pi", "-n", ns, "-f")
        assert (followed.returncode, followed.stdout) == (0, logs.stdout), followed.stderr

        sdk_ns = make_namespace(real_cluster)
        env = {
            **os.environ,
            "KUBECONFIG": str(kubeconfig_with_namespace(real_cluster, sdk_ns, tmp_path / "config")),
        }
        example = subprocess.run(
            [sys.executable, "-c", readme_sdk_example()],
            capture_output=True,
            text=True,
            env=env,
            timeout=400,
            check=False,
        )
        print(f"README SDK example printed:\n{example.stdout}{example.stderr}")
        assert example.returncode == 0, example.stderr
        assert_computed_pi(example.stdout, ranks=2)
    finally:
        # Back to the session's install: the Deployment at zero replicas, the tests' own operator processes.
        install_manifests(real_cluster)
        wait_for(lambda: not operator_pods(real_cluster), timeout=120, what="the Deployment's pods to stop")
