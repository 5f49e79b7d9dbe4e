"""Issue 18 on the real node: debug mode then mpirun by hand through `kubectl exec`, the generated mpirun line
for Open MPI, Intel MPI and MPICH, and a job that uses an SSH Secret of the user's own."""

from __future__ import annotations

import base64
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from mpioperator.controller.builders.secret import new_key_pair
from mpioperator.testing.cluster import LocalCluster
from mpioperator.testing.jobs import Job
from mpioperator.testing.operator import OperatorProcess
from mpioperator.testing.ranks import assert_ranks_ran_on_hostfile_hosts, ranks_by_host
from mpioperator.testing.wait import wait_for
from test.real.test_real_mpijobs import (
    RUN_TIMEOUT,
    assert_computed_pi,
    assert_pi_ran_where_the_hostfile_says,
    diagnosis,
    launcher_log,
    pi_job,
    run_to_success,
)

P = "mpioperator.io/"
# Where each image has its MPI (images/mpi-base/*.Dockerfile): Debian's Open MPI under /usr, the
# wheels' Intel MPI and MPICH under /opt.
MPI_HOMES = {"OpenMPI": "/usr", "Intel": "/opt/intel/mpi", "MPICH": "/opt/mpich"}


@pytest.fixture
def ns(real_cluster: LocalCluster, make_namespace: Any, real_operator: OperatorProcess) -> str:
    name: str = make_namespace(real_cluster)
    return name


def without_launcher_command(body: dict[str, Any], annotations: dict[str, str]) -> dict[str, Any]:
    container = body["spec"]["mpiReplicaSpecs"]["Launcher"]["template"]["spec"]["containers"][0]
    container.pop("command", None)
    container.pop("args", None)
    body["metadata"]["annotations"] = annotations
    return body


def test_debug_mode_job_waits_until_mpirun_run_by_hand_in_its_launcher_computes_pi(
    real_cluster: LocalCluster, ns: str
) -> None:
    body = pi_job("dbg", workers=2, ranks=2)
    body["metadata"]["annotations"] = {f"{P}debug-mode": "true"}
    job = Job(real_cluster, ns, "dbg").submit(body)

    debug = job.wait_condition("DebugMode", timeout=RUN_TIMEOUT)
    exec_line = debug["message"].split("Open a shell in it with: ")[1]
    assert exec_line == f"kubectl exec -it -n {ns} job/dbg-launcher -c launcher -- sh"
    wait_for(
        lambda: any(p["status"].get("phase") == "Running" for p in job.pods("launcher")),
        timeout=RUN_TIMEOUT,
        what="the debug launcher running",
    )
    assert job.condition("Succeeded") is None

    # The event's line without -it (no terminal here) and with mpirun instead of a shell.
    words = exec_line.split()
    assert words[:3] == ["kubectl", "exec", "-it"]
    ran = real_cluster.kubectl("exec", *words[3:-1], "mpirun", "-n", "2", "/home/mpiuser/pi", check=False)

    assert ran.returncode == 0, f"{ran.stdout}{ran.stderr}\n{diagnosis(job)}"
    assert_pi_ran_where_the_hostfile_says(real_cluster, ns, "dbg", ran.stdout, ranks=2)
    assert ranks_by_host(ran.stdout) == {"dbg-worker-0": [0], "dbg-worker-1": [1]}, ran.stdout
    assert job.condition("Succeeded") is None, "the launcher still waits after the hand-run mpirun"


@pytest.mark.parametrize("implementation", ["OpenMPI", "Intel", "MPICH"])
def test_generated_mpirun_line_computes_pi_for_each_implementation(
    real_cluster: LocalCluster, ns: str, implementation: str
) -> None:
    name = f"gen-{implementation.lower()}"
    body = without_launcher_command(
        pi_job(name, workers=2, ranks=2, implementation=implementation),
        {f"{P}launcher-program": "/home/mpiuser/pi", f"{P}mpi-home": MPI_HOMES[implementation]},
    )
    job = Job(real_cluster, ns, name)

    run_to_success(job, body)

    log = launcher_log(real_cluster, ns, name)
    assert_pi_ran_where_the_hostfile_says(real_cluster, ns, name, log, ranks=2)
    assert ranks_by_host(log) == {f"{name}-worker-0": [0], f"{name}-worker-1": [1]}, log
    events = real_cluster.rest.get(f"/api/v1/namespaces/{ns}/events")["items"]
    generated = [e["message"] for e in events if e["reason"] == "LauncherCommandGenerated"]
    assert len(generated) == 1 and MPI_HOMES[implementation] + "/bin/mpirun" in generated[0], generated


def test_job_with_its_own_ssh_secret_runs_and_the_secret_stays_as_it_was(
    real_cluster: LocalCluster, ns: str
) -> None:
    private, public = new_key_pair()
    secret = {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": "site-keys"},
        "type": "kubernetes.io/ssh-auth",
        "data": {
            "ssh-privatekey": base64.b64encode(private).decode(),
            "ssh-publickey": base64.b64encode(public).decode(),
        },
    }
    created = real_cluster.rest.create(f"/api/v1/namespaces/{ns}/secrets", secret)
    body = pi_job("own", workers=2, ranks=2)
    body["metadata"]["annotations"] = {f"{P}ssh-secret": "site-keys"}

    run_to_success(Job(real_cluster, ns, "own"), body)

    assert_pi_ran_where_the_hostfile_says(
        real_cluster, ns, "own", launcher_log(real_cluster, ns, "own"), ranks=2
    )
    names = [
        s["metadata"]["name"] for s in real_cluster.rest.get(f"/api/v1/namespaces/{ns}/secrets")["items"]
    ]
    assert "own-ssh" not in names
    after = real_cluster.rest.get(f"/api/v1/namespaces/{ns}/secrets/site-keys")
    assert after["metadata"]["resourceVersion"] == created["metadata"]["resourceVersion"]
    assert "ownerReferences" not in after["metadata"]


# The pi examples; horovod-from-t9k.yaml trains a model and is run by test_real_horovod.py.
MIGRATING = sorted(
    (Path(__file__).resolve().parents[2] / "examples" / "v2beta1" / "migrating").glob("pi-*.yaml")
)


@pytest.mark.parametrize("example", MIGRATING, ids=[p.stem for p in MIGRATING])
def test_converted_example_applied_as_it_is_computes_pi(
    real_cluster: LocalCluster, ns: str, example: Path
) -> None:
    """docs/migrating.md's examples; the openmpi prototype's needs the Secret its comment says to create,
    made with the prototype's key names (`id_rsa`, `id_rsa.pub`, `authorized_keys`)."""
    body = yaml.safe_load(example.read_text())
    name = body["metadata"]["name"]
    secret = body["metadata"].get("annotations", {}).get(f"{P}ssh-secret")
    if secret is not None:
        private, public = new_key_pair()
        files = {"id_rsa": private, "id_rsa.pub": public, "authorized_keys": public}
        real_cluster.rest.create(
            f"/api/v1/namespaces/{ns}/secrets",
            {
                "metadata": {"name": secret},
                "type": "Opaque",
                "data": {key: base64.b64encode(value).decode() for key, value in files.items()},
            },
        )
    real_cluster.kubectl("-n", ns, "apply", "-f", str(example))

    run_to_success(Job(real_cluster, ns, name))

    log = launcher_log(real_cluster, ns, name)
    print(f"$ kubectl logs job/{name}-launcher\n{log}")
    assert_pi_ran_where_the_hostfile_says(real_cluster, ns, name, log, ranks=2)
    assert_kubeflows_launcher_log_commands_work(real_cluster, ns, name)


def assert_kubeflows_launcher_log_commands_work(cluster: LocalCluster, ns: str, name: str) -> None:
    """Kubeflow's docs: PODNAME=$(kubectl get pods -l mpi_job_name=<job>,mpi_role_type=launcher -o name),
    then its log; and the same selector given to kubectl logs itself."""
    selector = f"mpi_job_name={name},mpi_role_type=launcher"
    pod_names = cluster.kubectl("-n", ns, "get", "pods", "-l", selector, "-o", "name").stdout.split()
    print(f"$ kubectl get pods -l {selector} -o name\n{' '.join(pod_names)}")
    assert len(pod_names) == 1, pod_names
    assert_computed_pi(cluster.kubectl("-n", ns, "logs", pod_names[0]).stdout, ranks=2)
    by_label = cluster.kubectl("-n", ns, "logs", "-l", selector).stdout
    print(f"$ kubectl logs -l {selector}\n{by_label}")
    assert_computed_pi(by_label, ranks=2)


FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "migrating"


def kubectl_mpijob_convert(manifest: str, *flags: str) -> subprocess.CompletedProcess[str]:
    """The installed console script, as a user runs it, reading the manifest from stdin."""
    return subprocess.run(
        [str(Path(sys.executable).with_name("kubectl-mpijob")), "convert", "-f", "-", *flags],
        input=manifest,
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    )


# The source manifests the T9k and FFFFFaraway examples were converted from, with the tool's flags.
CONVERT_SOURCES = {
    "t9k-pi.yaml": (),
    "ffffaraway-pi.yaml": ("--ssh-auth-mount-path", "/home/mpiuser/.ssh"),
}


@pytest.mark.parametrize("source", sorted(CONVERT_SOURCES))
def test_source_manifest_converted_by_kubectl_mpijob_convert_computes_pi(
    real_cluster: LocalCluster, ns: str, source: str
) -> None:
    """The documented conversion only: `kubectl mpijob convert` of the other operator's manifest, applied
    as it prints it."""
    converted = kubectl_mpijob_convert((FIXTURES / source).read_text(), *CONVERT_SOURCES[source])
    print(f"$ kubectl mpijob convert -f {source}\n{converted.stdout}{converted.stderr}")
    assert "warning:" not in converted.stderr
    name = yaml.safe_load(converted.stdout)["metadata"]["name"]
    real_cluster.kubectl("-n", ns, "apply", "-f", "-", input=converted.stdout)

    run_to_success(Job(real_cluster, ns, name))

    log = launcher_log(real_cluster, ns, name)
    print(f"$ kubectl logs job/{name}-launcher\n{log}")
    assert_pi_ran_where_the_hostfile_says(real_cluster, ns, name, log, ranks=2)
    events = real_cluster.rest.get(f"/api/v1/namespaces/{ns}/events")["items"]
    generated = [e["message"] for e in events if e["reason"] == "LauncherCommandGenerated"]
    print("\n".join(generated))
    if source.startswith("t9k"):
        # T9k's relative cmd, taken in the launcher's workingDir, with its mca, mpiHome and extraMPIArgs.
        assert len(generated) == 1, generated
        assert "/usr/bin/mpirun" in generated[0] and "/home/mpiuser/pi" in generated[0], generated
        assert "btl self,tcp" in generated[0] and "--bind-to none" in generated[0], generated


def test_t9k_ranks_per_worker_from_extra_mpi_args_run_that_many_ranks_on_each_worker(
    real_cluster: LocalCluster, ns: str
) -> None:
    """T9k's manual runs `-N 3` ranks on each worker; converted, `-N` gives the slots per worker, so the
    hostfile and the generated `-np` agree with it. Two here."""
    source = yaml.safe_load((FIXTURES / "t9k-pi.yaml").read_text())
    source["metadata"]["name"] = "t9k-per-node"
    source["spec"]["worker"]["extraMPIArgs"] = ["-N", "2", "--bind-to", "none"]
    converted = kubectl_mpijob_convert(yaml.safe_dump(source))
    print(f"$ kubectl mpijob convert -f -\n{converted.stdout}{converted.stderr}")
    assert yaml.safe_load(converted.stdout)["spec"]["slotsPerWorker"] == 2
    real_cluster.kubectl("-n", ns, "apply", "-f", "-", input=converted.stdout)

    run_to_success(Job(real_cluster, ns, "t9k-per-node"))

    log = launcher_log(real_cluster, ns, "t9k-per-node")
    print(f"$ kubectl logs job/t9k-per-node-launcher\n{log}")
    assert_pi_ran_where_the_hostfile_says(real_cluster, ns, "t9k-per-node", log, ranks=4)
    assert {host: len(ranks) for host, ranks in ranks_by_host(log).items()} == {
        "t9k-per-node-worker-0": 2,
        "t9k-per-node-worker-1": 2,
    }, log


def test_t9k_manuals_random_walk_job_converted_by_the_tool_runs_three_ranks_on_each_of_five_workers(
    real_cluster: LocalCluster, ns: str
) -> None:
    """T9k's user manual's job as it writes it: `cmd: ./random_walk 20 40 2` in the workingDir, `-N 3`,
    Open MPI's recovery flags, root's sshd, mpiHome /usr/local. Only its image is swapped for our stand-in
    (images/random-walk), T9k's not being in the node's registry."""
    source = (FIXTURES / "t9k-random-walk.yaml").read_text()
    assert source.count("t9kpublic/mpi-tutorial:2021022-2") == 1
    converted = kubectl_mpijob_convert(
        source.replace("t9kpublic/mpi-tutorial:2021022-2", "mpioperator/random-walk")
    )
    print(f"$ kubectl mpijob convert -f t9k-random-walk.yaml\n{converted.stdout}{converted.stderr}")
    assert "warning:" not in converted.stderr
    real_cluster.kubectl("-n", ns, "apply", "-f", "-", input=converted.stdout)

    run_to_success(Job(real_cluster, ns, "mpi-example"))

    log = launcher_log(real_cluster, ns, "mpi-example")
    print(f"$ kubectl logs job/mpi-example-launcher\n{log}")
    config = real_cluster.rest.get(f"/api/v1/namespaces/{ns}/configmaps/mpi-example-config")
    assert_ranks_ran_on_hostfile_hosts(log, config["data"]["hostfile"], ranks=15)
    assert {host: len(ranks) for host, ranks in ranks_by_host(log).items()} == {
        f"mpi-example-worker-{i}": 3 for i in range(5)
    }, log
    assert "random walk done: 30 of 30 walkers finished on 15 ranks" in log, log
