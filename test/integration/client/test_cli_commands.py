"""`kubectl mpijob` as a process against a real API server: each command, and bad input (a missing or
broken file, an unknown job, a wrong namespace, a bad kubeconfig) answered with one line and exit 1."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import yaml

from mpioperator.testing.cluster import LocalCluster
from test.integration.client.conftest import CLI, REPO, kubeconfig_with_namespace, run_cli, set_status

PI_EXAMPLE = REPO / "examples" / "v2beta1" / "pi" / "pi.yaml"
JOBS = "/apis/kubeflow.org/v2beta1/namespaces/{ns}/mpijobs"


def assert_one_line_error(result: subprocess.CompletedProcess[str], message: str) -> None:
    assert result.returncode == 1, (result.stdout, result.stderr)
    assert result.stderr == f"error: {message}\n"
    assert result.stdout == ""


def stored(cluster: LocalCluster, ns: str, name: str) -> dict[str, object]:
    job: dict[str, object] = cluster.rest.get(f"{JOBS.format(ns=ns)}/{name}")
    return job


def test_kubectl_finds_the_plugin_on_path(served: LocalCluster) -> None:
    env = dict(os.environ, PATH=f"{CLI.parent}{os.pathsep}{os.environ.get('PATH', '')}")
    result = subprocess.run(
        [served.binaries.path("kubectl"), "mpijob", "--help"],
        capture_output=True,
        text=True,
        env=env,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("usage: kubectl mpijob")
    for command in ("submit", "list", "describe", "logs", "wait", "delete", "suspend", "resume"):
        assert f"    {command} " in result.stdout


def test_submit_from_the_example_file(served: LocalCluster, ns: str) -> None:
    result = run_cli(served, "submit", "-f", str(PI_EXAMPLE), "-n", ns)

    assert result.returncode == 0, result.stderr
    assert result.stdout == "mpijob.kubeflow.org/pi created\n"
    spec, example = stored(served, ns, "pi")["spec"], yaml.safe_load(PI_EXAMPLE.read_text())["spec"]
    assert isinstance(spec, dict)
    assert spec["mpiReplicaSpecs"] == example["mpiReplicaSpecs"]
    assert spec["runPolicy"]["ttlSecondsAfterFinished"] == example["runPolicy"]["ttlSecondsAfterFinished"]


def test_submit_from_flags(served: LocalCluster, ns: str) -> None:
    result = run_cli(
        served,
        "submit", "flagged", "-n", ns, "--image", "mpioperator/mpi-pi:mpich", "--workers", "3", "--slots", "2",
        "--implementation", "MPICH", "--", "mpirun", "-n", "6", "/home/mpiuser/pi",
    )  # fmt: skip

    assert result.returncode == 0, result.stderr
    assert result.stdout == "mpijob.kubeflow.org/flagged created\n"
    spec = stored(served, ns, "flagged")["spec"]
    assert isinstance(spec, dict)
    assert (spec["slotsPerWorker"], spec["mpiImplementation"]) == (2, "MPICH")
    assert spec["mpiReplicaSpecs"]["Worker"]["replicas"] == 3
    launcher = spec["mpiReplicaSpecs"]["Launcher"]["template"]["spec"]["containers"][0]
    assert launcher["command"] == ["mpirun", "-n", "6", "/home/mpiuser/pi"]
    assert launcher["image"] == "mpioperator/mpi-pi:mpich"


def test_submit_of_a_missing_file(served: LocalCluster, ns: str) -> None:
    result = run_cli(served, "submit", "-f", "/no/such/pi.yaml", "-n", ns)
    assert_one_line_error(result, "cannot read /no/such/pi.yaml: No such file or directory")


def test_submit_of_a_file_that_is_not_yaml(served: LocalCluster, ns: str, tmp_path: Path) -> None:
    broken = tmp_path / "broken.yaml"
    broken.write_text("kind: MPIJob\nspec: [unclosed\n")
    result = run_cli(served, "submit", "-f", str(broken), "-n", ns)
    assert result.returncode == 1
    assert result.stderr.startswith(f"error: {broken} is not valid YAML (line 3): ")
    assert result.stderr.count("\n") == 1


def test_submit_of_a_file_that_holds_no_mpijob(served: LocalCluster, ns: str, tmp_path: Path) -> None:
    other = tmp_path / "deploy.yaml"
    other.write_text("apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: d}\n")
    result = run_cli(served, "submit", "-f", str(other), "-n", ns)
    assert_one_line_error(
        result,
        f"MPIJob d is invalid: {other}: expected kind MPIJob of kubeflow.org/v2beta1, found Deployment",
    )


def test_submit_into_a_namespace_that_does_not_exist(served: LocalCluster) -> None:
    result = run_cli(served, "submit", "-f", str(PI_EXAMPLE), "-n", "no-such-ns")
    assert_one_line_error(result, "namespace 'no-such-ns' not found")


def test_submit_twice(served: LocalCluster, ns: str) -> None:
    assert run_cli(served, "submit", "-f", str(PI_EXAMPLE), "-n", ns).returncode == 0
    assert_one_line_error(
        run_cli(served, "submit", "-f", str(PI_EXAMPLE), "-n", ns), f"MPIJob {ns}/pi already exists"
    )


def test_submit_refused_by_the_crd_gives_the_servers_reason(
    served: LocalCluster, ns: str, tmp_path: Path
) -> None:
    job = yaml.safe_load(PI_EXAMPLE.read_text())
    job["spec"]["mpiImplementation"] = "MVAPICH"
    bad = tmp_path / "bad.yaml"
    bad.write_text(yaml.safe_dump(job))
    result = run_cli(served, "submit", "-f", str(bad), "-n", ns)
    assert result.returncode == 1
    assert result.stderr.startswith("error: MPIJob pi is invalid: ")
    assert 'spec.mpiImplementation: Unsupported value: "MVAPICH"' in result.stderr
    assert result.stderr.count("\n") == 1


def test_list_in_the_namespace_and_across_namespaces(
    served: LocalCluster, ns: str, make_namespace: object
) -> None:
    for name in ("alpha", "beta"):
        run_cli(served, "submit", name, "-n", ns, "--image", "x:1", "--workers", "2")
    set_status(
        served,
        ns,
        "beta",
        [("Created", "True"), ("Running", "True")],
        replicaStatuses={"Worker": {"active": 2}},
    )

    listed = run_cli(served, "list", "-n", ns)
    everywhere = run_cli(served, "list", "-A")

    assert listed.returncode == 0, listed.stderr
    rows = [line.split() for line in listed.stdout.splitlines()]
    assert rows[0] == ["NAME", "PHASE", "WORKERS", "AGE"]
    assert [row[:3] for row in rows[1:]] == [["alpha", "Pending", "0/2"], ["beta", "Running", "2/2"]]
    assert everywhere.stdout.splitlines()[0].split() == ["NAMESPACE", "NAME", "PHASE", "WORKERS", "AGE"]
    assert [ns, "beta", "Running", "2/2"] in [line.split()[:4] for line in everywhere.stdout.splitlines()]


def test_list_of_an_empty_namespace_says_so(served: LocalCluster, ns: str) -> None:
    result = run_cli(served, "list", "-n", ns)
    assert (result.returncode, result.stdout) == (0, f"No MPIJobs found in namespace {ns}.\n")


def test_namespace_comes_from_the_kubeconfig_context(served: LocalCluster, ns: str, tmp_path: Path) -> None:
    kubeconfig = kubeconfig_with_namespace(served, ns, tmp_path / "config")
    assert run_cli(served, "submit", "ctx", "--image", "x:1", kubeconfig=kubeconfig).returncode == 0
    assert stored(served, ns, "ctx")
    assert "ctx" in run_cli(served, "list", kubeconfig=kubeconfig).stdout


def test_describe_shows_phase_conditions_counts_problem_pods_and_events(
    served: LocalCluster, ns: str
) -> None:
    run_cli(served, "submit", "pi", "-n", ns, "--image", "x:1", "--workers", "2")
    set_status(
        served, ns, "pi", [("Created", "True"), ("Running", "True")],
        replicaStatuses={"Launcher": {"active": 1}, "Worker": {"active": 1}},
    )  # fmt: skip
    served.rest.create(
        f"/api/v1/namespaces/{ns}/pods",
        {
            "metadata": {"name": "pi-worker-1", "labels": {"training.kubeflow.org/job-name": "pi"}},
            "spec": {"containers": [{"name": "worker", "image": "x:1"}]},
        },
    )
    # As the scheduler reports a pod it cannot place (read, change the status, write it back).
    worker = served.rest.get(f"/api/v1/namespaces/{ns}/pods/pi-worker-1")
    worker["status"] = {
        "phase": "Pending",
        "conditions": [
            {"type": "PodScheduled", "status": "False", "reason": "Unschedulable", "message": "0/4 nodes fit"}
        ],
    }
    served.rest.request("PUT", f"/api/v1/namespaces/{ns}/pods/pi-worker-1/status", worker)
    uid = stored(served, ns, "pi")["metadata"]["uid"]  # type: ignore[index]
    served.rest.create(
        f"/api/v1/namespaces/{ns}/events",
        {
            "metadata": {"name": "pi.1"},
            "involvedObject": {"kind": "MPIJob", "name": "pi", "namespace": ns, "uid": uid},
            "reason": "MPIJobCreated",
            "message": f"MPIJob {ns}/pi is created.",
            "type": "Normal",
        },
    )

    result = run_cli(served, "describe", "pi", "-n", ns)

    assert result.returncode == 0, result.stderr
    text = result.stdout
    assert "Phase:              Running" in text
    assert [line.split()[:4] for line in text.splitlines() if line.startswith("  Worker ")] == [
        ["Worker", "2", "1", "0"]
    ]
    assert "MPIJobRunning" in text and f"MPIJob {ns}/pi is running." in text
    assert "pi-worker-1   Pending   Unschedulable: 0/4 nodes fit" in text
    assert "MPIJobCreated   mpijob/pi" in text


def test_describe_logs_wait_delete_suspend_resume_of_an_unknown_job(served: LocalCluster, ns: str) -> None:
    for command in ("describe", "logs", "wait", "delete", "suspend", "resume"):
        assert_one_line_error(run_cli(served, command, "missing", "-n", ns), f"MPIJob {ns}/missing not found")


def test_describe_in_a_namespace_that_does_not_exist(served: LocalCluster) -> None:
    result = run_cli(served, "describe", "pi", "-n", "no-such-ns")
    assert_one_line_error(result, "MPIJob no-such-ns/pi not found: namespace 'no-such-ns' does not exist")


def test_logs_before_the_launcher_exists(served: LocalCluster, ns: str) -> None:
    run_cli(served, "submit", "pi", "-n", ns, "--image", "x:1")
    assert_one_line_error(run_cli(served, "logs", "pi", "-n", ns), f"MPIJob {ns}/pi has no launcher pod yet")


def test_wait_exits_0_on_success_and_1_on_failure(served: LocalCluster, ns: str) -> None:
    for name in ("good", "bad"):
        run_cli(served, "submit", name, "-n", ns, "--image", "x:1")
    set_status(served, ns, "good", [("Created", "True"), ("Succeeded", "True")])
    set_status(served, ns, "bad", [("Created", "True"), ("Failed", "True")])

    good = run_cli(served, "wait", "good", "-n", ns, "--timeout", "30")
    bad = run_cli(served, "wait", "bad", "-n", ns, "--timeout", "30")

    assert (good.returncode, bad.returncode) == (0, 1)
    assert good.stdout.splitlines()[-1].startswith("good: Succeeded")
    assert bad.stdout.splitlines()[-1].startswith("bad: Failed")
    assert bad.stderr == ""


def test_wait_that_times_out_says_how_far_the_job_got(served: LocalCluster, ns: str) -> None:
    run_cli(served, "submit", "slow", "-n", ns, "--image", "x:1")
    result = run_cli(served, "wait", "slow", "-n", ns, "--timeout", "1", "--quiet")
    assert result.returncode == 1
    assert result.stderr == f"error: MPIJob {ns}/slow still Pending after 1s\n"


def test_suspend_resume_and_delete(served: LocalCluster, ns: str) -> None:
    run_cli(served, "submit", "pi", "-n", ns, "--image", "x:1")

    assert run_cli(served, "suspend", "pi", "-n", ns).stdout == "mpijob.kubeflow.org/pi suspended\n"
    assert stored(served, ns, "pi")["spec"]["runPolicy"]["suspend"] is True  # type: ignore[index]
    assert run_cli(served, "resume", "pi", "-n", ns).stdout == "mpijob.kubeflow.org/pi resumed\n"
    assert stored(served, ns, "pi")["spec"]["runPolicy"]["suspend"] is False  # type: ignore[index]
    assert run_cli(served, "delete", "pi", "-n", ns, "--wait").stdout == "mpijob.kubeflow.org/pi deleted\n"
    assert "No MPIJobs found" in run_cli(served, "list", "-n", ns).stdout


def test_a_kubeconfig_that_does_not_exist(served: LocalCluster, tmp_path: Path) -> None:
    missing = tmp_path / "nope"
    result = run_cli(served, "list", "--kubeconfig", str(missing))
    assert_one_line_error(result, f"cannot load kubeconfig {missing}: file not found")


def test_an_unknown_context(served: LocalCluster) -> None:
    result = run_cli(served, "list", "--context", "nope")
    assert result.returncode == 1
    assert result.stderr.startswith(f"error: cannot load kubeconfig {served.kubeconfig}: ")
    assert "nope" in result.stderr and result.stderr.count("\n") == 1
