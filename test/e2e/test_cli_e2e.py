"""`kubectl mpijob` driving jobs the real operator runs on the full local cluster (kwok pods, whose outcome
the launcher's simulation annotations choose): wait shows the job's progress and exits 0 or 1 by its
end, describe shows the operator's conditions and events, suspend and resume act on running jobs."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from mpioperator.testing.cluster import LocalCluster
from mpioperator.testing.jobs import Job
from mpioperator.testing.mpijobs import mpijob
from mpioperator.testing.operator import OperatorProcess
from mpioperator.testing.wait import wait_for
from test.integration.client.conftest import run_cli


@pytest.fixture
def ns(installed_cluster: LocalCluster, make_namespace: Any, operator: OperatorProcess) -> str:
    name: str = make_namespace(installed_cluster)
    return name


def submit(cluster: LocalCluster, ns: str, tmp_path: Path, job: dict[str, Any]) -> None:
    path = tmp_path / f"{job['metadata']['name']}.yaml"
    path.write_text(yaml.safe_dump(job))
    result = run_cli(cluster, "submit", "-f", str(path), "-n", ns)
    assert result.returncode == 0, result.stderr


def test_wait_follows_a_job_to_succeeded_and_exits_0(
    installed_cluster: LocalCluster, ns: str, tmp_path: Path
) -> None:
    submit(installed_cluster, ns, tmp_path, mpijob("pi", workers=2, launcher_runs_for="3s"))

    result = run_cli(installed_cluster, "wait", "pi", "-n", ns, "--timeout", "120")

    assert result.returncode == 0, result.stdout + result.stderr
    phases = [line.split(";")[0] for line in result.stdout.splitlines()]
    assert phases[-1] == "pi: Succeeded", result.stdout
    assert "pi: Running" in phases, result.stdout
    assert phases.index("pi: Running") < len(phases) - 1
    assert result.stdout.splitlines()[-1].startswith("pi: Succeeded; launcher 0/1 active, 1 succeeded")


def test_wait_exits_1_when_the_job_fails_and_describe_says_why(
    installed_cluster: LocalCluster, ns: str, tmp_path: Path
) -> None:
    job = mpijob(
        "crash", workers=1, launcher_runs_for="1s", launcher_exit_code=3, run_policy={"backoffLimit": 0}
    )
    submit(installed_cluster, ns, tmp_path, job)

    waited = run_cli(installed_cluster, "wait", "crash", "-n", ns, "--timeout", "180")
    described = run_cli(installed_cluster, "describe", "crash", "-n", ns)

    assert waited.returncode == 1, waited.stdout + waited.stderr
    assert waited.stdout.splitlines()[-1].startswith("crash: Failed")
    assert waited.stderr == ""
    assert described.returncode == 0, described.stderr
    assert "Phase:              Failed" in described.stdout
    failed_rows = [line.split() for line in described.stdout.splitlines() if line.startswith("  Failed ")]
    assert failed_rows and failed_rows[0][1] == "True", described.stdout
    events = [line.split()[2:4] for line in described.stdout.split("Events:")[1].splitlines()[2:]]
    assert ["MPIJobCreated", "mpijob/crash"] in events, described.stdout
    assert "crash-launcher-" in described.stdout.split("Problem pods:")[1].split("Events:")[0]
    assert "launcher exited with 3 (Error)" in described.stdout


def test_suspend_stops_a_running_job_and_resume_runs_it_to_the_end(
    installed_cluster: LocalCluster, ns: str, tmp_path: Path
) -> None:
    submit(installed_cluster, ns, tmp_path, mpijob("later", workers=2, launcher_runs_for="600s"))
    job = Job(installed_cluster, ns, "later")
    job.wait_condition("Running")

    assert run_cli(installed_cluster, "suspend", "later", "-n", ns).returncode == 0
    job.wait_condition("Suspended")
    wait_for(lambda: job.pods("worker") == [], timeout=60, what="workers deleted while suspended")
    described = run_cli(installed_cluster, "describe", "later", "-n", ns)
    assert "Phase:              Suspended" in described.stdout
    assert "Suspended:          yes" in described.stdout

    # Resumed pods are new; a short run this time, so the job ends.
    job.patch(
        {
            "spec": {
                "mpiReplicaSpecs": {
                    "Launcher": {
                        "template": {"metadata": {"annotations": {"sim.mpioperator.io/run-for": "2s"}}}
                    }
                }
            }
        }
    )
    assert run_cli(installed_cluster, "resume", "later", "-n", ns).returncode == 0
    waited = run_cli(installed_cluster, "wait", "later", "-n", ns, "--timeout", "180", "--quiet")
    assert (waited.returncode, waited.stdout) == (0, "later: Succeeded\n"), waited.stderr


def test_list_and_delete_jobs_the_operator_runs(
    installed_cluster: LocalCluster, ns: str, tmp_path: Path
) -> None:
    submit(installed_cluster, ns, tmp_path, mpijob("listed", workers=2, launcher_runs_for="600s"))
    Job(installed_cluster, ns, "listed").wait_condition("Running")
    wait_for(
        lambda: "2/2" in run_cli(installed_cluster, "list", "-n", ns).stdout,
        timeout=60,
        what="list to show both workers active",
    )

    deleted = run_cli(installed_cluster, "delete", "listed", "-n", ns, "--wait")

    assert deleted.returncode == 0, deleted.stderr
    assert run_cli(installed_cluster, "list", "-n", ns).stdout == f"No MPIJobs found in namespace {ns}.\n"
