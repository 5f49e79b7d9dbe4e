"""`kubectl mpijob convert` on FFFFFaraway's MPIJob: numWorkers and the two templates, what its operator did
without being asked written out, and what works differently here named."""

from __future__ import annotations

from typing import Any

import pytest

from mpioperator.api.defaults import set_defaults
from mpioperator.cli.convert import ConversionError, convert
from test.unit.cli.test_convert_t9k import EXAMPLES, FIXTURES, load, replicas

P = "mpioperator.io/"
SSHD = {"name": "w", "image": "img", "command": ["/usr/sbin/sshd", "-De"]}


def ffffaraway_job(**spec: Any) -> dict[str, Any]:
    body: dict[str, Any] = {
        "apiVersion": "batch.test.bdap.com/v1",
        "kind": "MPIJob",
        "metadata": {"name": "train"},
        "spec": {
            "numWorkers": 3,
            "launcherTemplate": {
                "spec": {"containers": [{"name": "l", "image": "img", "args": ["mpirun", "x"]}]}
            },
            "workerTemplate": {"spec": {"containers": [dict(SSHD)]}},
        },
    }
    body["spec"].update(spec)
    return body


def test_converted_ffffaraway_pi_manifest_is_the_hand_converted_example() -> None:
    done = convert(load(FIXTURES / "ffffaraway-pi.yaml"), ssh_auth_mount_path="/home/mpiuser/.ssh")

    assert set_defaults(done.job) == set_defaults(load(EXAMPLES / "pi-from-ffffaraway.yaml"))
    assert done.warnings == []


def test_num_workers_and_templates_become_the_replica_specs() -> None:
    body = ffffaraway_job()

    job = convert(body).job

    assert replicas(job, "Worker") == {"replicas": 3, "template": body["spec"]["workerTemplate"]}
    assert replicas(job, "Launcher") == {"replicas": 1, "template": body["spec"]["launcherTemplate"]}
    assert job["spec"]["slotsPerWorker"] == 1  # its hostfile's fixed slots=1
    assert job["spec"]["launcherCreationPolicy"] == "WaitForWorkersReady"  # it waited for Ready workers
    assert job["metadata"]["annotations"] == {f"{P}roll-workers-on-template-change": "true"}


def test_the_launcher_templates_restart_policy_is_the_launchers_where_upstream_reads_it() -> None:
    body = ffffaraway_job()
    body["spec"]["launcherTemplate"]["spec"]["restartPolicy"] = "Never"

    done = convert(body)

    launcher = replicas(done.job, "Launcher")
    assert launcher["restartPolicy"] == "Never"
    assert "restartPolicy" not in launcher["template"]["spec"]
    assert any("restartPolicy Never is the replica's restartPolicy" in note for note in done.notes), (
        done.notes
    )


def test_ffffaraways_own_sample_is_converted_with_what_differs_named() -> None:
    done = convert(load(FIXTURES / "ffffaraway-training-cpu.yaml"))

    assert done.job["metadata"]["namespace"] == "sw-mpi-operator"
    assert replicas(done.job, "Worker")["replicas"] == 5
    assert any("not through kubectl exec" in w for w in done.warnings), done.warnings
    assert any("gang-scheduler settings" in w for w in done.warnings), done.warnings
    assert any("--ssh-auth-mount-path" in w for w in done.warnings) is False  # it runs as root


def test_unknown_ffffaraway_fields_are_named() -> None:
    done = convert(ffffaraway_job(gangConfig="gpu-pg"))

    assert [w.split(" is not")[0] for w in done.warnings] == ["spec.gangConfig"]


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"numWorkers": None}, "spec.numWorkers is required"),
        ({"launcherTemplate": None}, "spec.launcherTemplate is required"),
        ({"workerTemplate": {"spec": {"containers": []}}}, "spec.workerTemplate is required"),
    ],
)
def test_ffffaraway_manifests_that_cannot_be_converted_are_refused(
    change: dict[str, Any], message: str
) -> None:
    with pytest.raises(ConversionError, match=message):
        convert(ffffaraway_job(**change))
