"""The launcher Job (§2.6.5, Appendix A, upstream's TestNewLauncherAndWorker launcher half)."""

from __future__ import annotations

import copy

import pytest

from mpioperator.api.objects import Obj
from mpioperator.controller.builders.launcher_job import (
    launcher_pod_template,
    merge_scheduling_directives,
    new_launcher_job,
)
from mpioperator.controller.decorators import compose
from test.unit.controller.jobs import OWNER, reference_job, with_spec

SSH_ITEMS = [
    {"key": "ssh-privatekey", "path": "id_rsa"},
    {"key": "ssh-publickey", "path": "id_rsa.pub"},
    {"key": "ssh-publickey", "path": "authorized_keys"},
]
CONFIG_VOLUME = {
    "name": "mpi-job-config",
    "configMap": {
        "name": "pi-config",
        "items": [
            {"key": "hostfile", "path": "hostfile", "mode": 292},
            {"key": "discover_hosts.sh", "path": "discover_hosts.sh", "mode": 365},
        ],
    },
}
ROLE_LABELS = {
    "training.kubeflow.org/operator-name": "mpi-operator",
    "training.kubeflow.org/job-name": "pi",
    "training.kubeflow.org/job-role": "launcher",
    # ours: the labels Kubeflow's docs select by
    "mpi_job_name": "pi",
    "mpi_role_type": "launcher",
}
NVIDIA = [{"name": "NVIDIA_VISIBLE_DEVICES"}, {"name": "NVIDIA_DRIVER_CAPABILITIES"}]


def _env(*pairs: tuple[str, str]) -> list[Obj]:
    return [{"name": n, "value": v} for n, v in pairs]


def _prrte(slots: str) -> tuple[tuple[str, str], ...]:
    """What Open MPI 5's mpirun (PRRTE) reads instead of the OMPI_MCA_orte_* names."""
    return (
        ("PRTE_MCA_prte_keep_fqdn_hostnames", "false"),
        ("PRTE_MCA_prte_default_hostfile", "/etc/mpi/hostfile"),
        ("PRTE_MCA_plm_ssh_args", "-o ConnectionAttempts=10"),
        ("PRTE_MCA_prte_set_default_slots", slots),
        ("PRTE_MCA_plm_ssh_no_tree_spawn", "1"),
    )


def _launcher_template(job: Obj) -> Obj:
    template: Obj = job["spec"]["mpiReplicaSpecs"]["Launcher"]["template"]
    return template


def test_launcher_job_renders_appendix_a() -> None:
    body, overridden = new_launcher_job(reference_job())
    assert overridden is False
    assert body == {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {
            "name": "pi-launcher",
            "namespace": "default",
            "labels": {"app": "pi"},
            "ownerReferences": [OWNER],
        },
        "spec": {
            "podReplacementPolicy": "Failed",
            "template": {
                "metadata": {"labels": ROLE_LABELS, "ownerReferences": [OWNER]},
                "spec": {
                    "hostname": "pi-launcher",
                    "subdomain": "pi",
                    "restartPolicy": "OnFailure",
                    "containers": [
                        {
                            "name": "launcher",
                            "image": "img",
                            "command": ["mpirun"],
                            "args": ["-n", "2", "/pi"],
                            "env": [
                                *_env(
                                    ("K_MPI_JOB_ROLE", "launcher"),
                                    ("OMPI_MCA_orte_keep_fqdn_hostnames", "true"),
                                    ("OMPI_MCA_orte_default_hostfile", "/etc/mpi/hostfile"),
                                    ("OMPI_MCA_plm_rsh_args", "-o ConnectionAttempts=10"),
                                    ("OMPI_MCA_orte_set_default_slots", "1"),
                                    *_prrte("1"),
                                ),
                                *NVIDIA,
                            ],
                            "terminationMessagePolicy": "FallbackToLogsOnError",
                            "volumeMounts": [
                                {"name": "ssh-auth", "mountPath": "/root/.ssh"},
                                {"name": "mpi-job-config", "mountPath": "/etc/mpi"},
                            ],
                        }
                    ],
                    "volumes": [
                        {
                            "name": "ssh-auth",
                            "secret": {"secretName": "pi-ssh", "defaultMode": 384, "items": SSH_ITEMS},
                        },
                        CONFIG_VOLUME,
                    ],
                },
            },
        },
    }


@pytest.mark.parametrize(
    ("implementation", "slots", "expected"),
    [
        (
            "OpenMPI",
            3,
            _env(
                ("K_MPI_JOB_ROLE", "launcher"),
                ("OMPI_MCA_orte_keep_fqdn_hostnames", "true"),
                ("OMPI_MCA_orte_default_hostfile", "/etc/mpi/hostfile"),
                ("OMPI_MCA_plm_rsh_args", "-o ConnectionAttempts=10"),
                ("OMPI_MCA_orte_set_default_slots", "3"),
                *_prrte("3"),
            ),
        ),
        (
            "Intel",
            3,
            _env(
                ("K_MPI_JOB_ROLE", "launcher"),
                ("I_MPI_HYDRA_HOST_FILE", "/etc/mpi/hostfile"),
                ("I_MPI_HYDRA_BOOTSTRAP_EXEC_EXTRA_ARGS", "-o ConnectionAttempts=10"),
                ("I_MPI_PERHOST", "3"),
            ),
        ),
        (
            "MPICH",
            3,
            _env(
                ("K_MPI_JOB_ROLE", "launcher"),
                ("HYDRA_HOST_FILE", "/etc/mpi/hostfile"),
                ("HYDRA_LAUNCH_EXTRA_ARGS", "-o ConnectionAttempts=10"),
            ),
        ),
    ],
)
def test_launcher_env_per_implementation(implementation: str, slots: int, expected: list[Obj]) -> None:
    job = with_spec(reference_job(), mpiImplementation=implementation, slotsPerWorker=slots)
    template, _ = launcher_pod_template(job)
    assert template["spec"]["containers"][0]["env"] == [*expected, *NVIDIA]
    # When the launcher is also a worker it keeps its GPUs: no blanking variables.
    as_worker, _ = launcher_pod_template(with_spec(job, runLauncherAsWorker=True))
    assert as_worker["spec"]["containers"][0]["env"] == expected


def test_prrte_variables_the_user_sets_in_the_launcher_template_keep_the_users_value() -> None:
    job = reference_job()
    container = _launcher_template(job)["spec"]["containers"][0]
    container["env"] = _env(
        ("PRTE_MCA_plm_ssh_args", "-o ConnectionAttempts=3 -p 22"),
        ("PRTE_MCA_plm_ssh_no_tree_spawn", "0"),
    )
    template, _ = launcher_pod_template(job)
    env = [(e["name"], e.get("value")) for e in template["spec"]["containers"][0]["env"]]
    assert [value for name, value in env if name == "PRTE_MCA_plm_ssh_args"] == [
        "-o ConnectionAttempts=3 -p 22"
    ]
    assert [value for name, value in env if name == "PRTE_MCA_plm_ssh_no_tree_spawn"] == ["0"]
    # The ones the user left alone are still set.
    assert ("PRTE_MCA_prte_default_hostfile", "/etc/mpi/hostfile") in env
    assert ("PRTE_MCA_prte_set_default_slots", "1") in env


def test_prrte_variables_are_for_open_mpi_only() -> None:
    for implementation in ("Intel", "MPICH"):
        template, _ = launcher_pod_template(with_spec(reference_job(), mpiImplementation=implementation))
        names = [e["name"] for e in template["spec"]["containers"][0]["env"]]
        assert not [name for name in names if name.startswith("PRTE_")], names


def test_launcher_as_worker_gets_replica_index_zero_after_decoration() -> None:
    def decorate(template: Obj) -> None:
        template["spec"]["schedulerName"] = "gang"
        template["metadata"]["labels"]["scheduling.x-k8s.io/pod-group"] = "pi"
        # A decorator cannot take index 0 away from the launcher: the index is applied last.
        template["metadata"]["labels"]["training.kubeflow.org/replica-index"] = "9"

    job = with_spec(reference_job(), runLauncherAsWorker=True)
    body, _ = new_launcher_job(job, [decorate])
    template = body["spec"]["template"]
    assert template["metadata"]["labels"] == {
        **ROLE_LABELS,
        "scheduling.x-k8s.io/pod-group": "pi",
        "training.kubeflow.org/replica-index": "0",
    }
    assert template["spec"]["schedulerName"] == "gang"
    plain, _ = new_launcher_job(reference_job())
    assert "training.kubeflow.org/replica-index" not in plain["spec"]["template"]["metadata"]["labels"]


def test_launcher_overrides_case() -> None:
    """Intel, slots 5, custom SSH path, run policy copied, hostNetwork, user entries first."""
    job = with_spec(
        reference_job(),
        mpiImplementation="Intel",
        slotsPerWorker=5,
        sshAuthMountPath="/home/mpiuser/.ssh",
        runPolicy={
            "cleanPodPolicy": "Running",
            "ttlSecondsAfterFinished": 1,
            "activeDeadlineSeconds": 2,
            "backoffLimit": 3,
        },
    )
    sidecar = {"name": "sidecar", "image": "side"}
    _launcher_template(job).update(
        {
            "metadata": {
                "name": "dropped",
                "namespace": "dropped",
                "labels": {"app": "mine"},
                "annotations": {"note": "kept"},
                "finalizers": ["example.com/keep"],
            },
            "spec": {
                "hostNetwork": True,
                "containers": [
                    {
                        "name": "launcher",
                        "image": "img",
                        "env": [{"name": "USER_VAR", "value": "x"}],
                        "volumeMounts": [{"name": "data", "mountPath": "/data"}],
                    },
                    sidecar,
                ],
                "volumes": [{"name": "data", "emptyDir": {}}],
            },
        }
    )
    original = copy.deepcopy(job)
    body, overridden = new_launcher_job(job)
    assert overridden is False
    assert body["spec"] == {
        "ttlSecondsAfterFinished": 1,
        "activeDeadlineSeconds": 2,
        "backoffLimit": 3,
        "podReplacementPolicy": "Failed",
        "template": {
            "metadata": {
                "labels": {"app": "mine", **ROLE_LABELS},
                "annotations": {"note": "kept"},
                "ownerReferences": [OWNER],
            },
            "spec": {
                "hostNetwork": True,
                "dnsPolicy": "ClusterFirstWithHostNet",
                "hostname": "pi-launcher",
                "subdomain": "pi",
                "restartPolicy": "OnFailure",
                "containers": [
                    {
                        "name": "launcher",
                        "image": "img",
                        "env": [
                            *_env(
                                ("USER_VAR", "x"),
                                ("K_MPI_JOB_ROLE", "launcher"),
                                ("I_MPI_HYDRA_HOST_FILE", "/etc/mpi/hostfile"),
                                ("I_MPI_HYDRA_BOOTSTRAP_EXEC_EXTRA_ARGS", "-o ConnectionAttempts=10"),
                                ("I_MPI_PERHOST", "5"),
                            ),
                            *NVIDIA,
                        ],
                        "terminationMessagePolicy": "FallbackToLogsOnError",
                        "volumeMounts": [
                            {"name": "data", "mountPath": "/data"},
                            {"name": "ssh-auth", "mountPath": "/home/mpiuser/.ssh"},
                            {"name": "mpi-job-config", "mountPath": "/etc/mpi"},
                        ],
                    },
                    sidecar,
                ],
                "volumes": [
                    {"name": "data", "emptyDir": {}},
                    {"name": "ssh-auth", "secret": {"secretName": "pi-ssh", "items": SSH_ITEMS}},
                    CONFIG_VOLUME,
                ],
            },
        },
    }
    assert job == original, "the builder must not mutate the MPIJob"


def test_launcher_job_is_created_suspended_only_when_the_mpijob_is() -> None:
    job = with_spec(reference_job(), runPolicy={"cleanPodPolicy": "Running", "suspend": True})
    assert new_launcher_job(job)[0]["spec"]["suspend"] is True
    job = with_spec(reference_job(), runPolicy={"cleanPodPolicy": "Running", "suspend": False})
    assert "suspend" not in new_launcher_job(job)[0]["spec"]


@pytest.mark.parametrize(
    ("replica_policy", "template_policy", "expected", "warned"),
    [
        ("OnFailure", None, "OnFailure", False),
        ("Never", None, "Never", False),
        ("ExitCode", None, "Never", False),
        ("OnFailure", "Never", "OnFailure", True),
        ("Never", "Always", "Never", True),
        # FFFFFaraway's launcher template says Never and no replica policy: upstream's default wins
        (None, "Never", "OnFailure", True),
    ],
)
def test_launcher_restart_policy_and_override_warning(
    replica_policy: str | None, template_policy: str | None, expected: str, warned: bool
) -> None:
    job = reference_job()
    if replica_policy is None:
        job["spec"]["mpiReplicaSpecs"]["Launcher"].pop("restartPolicy", None)
    else:
        job["spec"]["mpiReplicaSpecs"]["Launcher"]["restartPolicy"] = replica_policy
    if template_policy is not None:
        _launcher_template(job)["spec"]["restartPolicy"] = template_policy
    body, overridden = new_launcher_job(job)
    assert body["spec"]["template"]["spec"]["restartPolicy"] == expected
    assert overridden is warned


def test_resume_merges_labels_and_annotations_and_replaces_directives() -> None:
    existing: Obj = {
        "metadata": {"labels": {"keep": "1", "clash": "old"}, "annotations": {"a": "1"}},
        "spec": {
            "nodeSelector": {"zone": "old"},
            "tolerations": [{"key": "old"}],
            "schedulingGates": [{"name": "kueue"}],
            "containers": [{"name": "launcher", "image": "img"}],
        },
    }
    desired: Obj = {
        "metadata": {"labels": {"clash": "new", "added": "2"}, "annotations": {"b": "2"}},
        "spec": {"nodeSelector": {"zone": "new"}, "tolerations": [{"key": "new"}]},
    }
    merge_scheduling_directives(existing, desired)
    assert existing == {
        "metadata": {
            "labels": {"keep": "1", "clash": "new", "added": "2"},
            "annotations": {"a": "1", "b": "2"},
        },
        "spec": {
            "nodeSelector": {"zone": "new"},
            "tolerations": [{"key": "new"}],
            "containers": [{"name": "launcher", "image": "img"}],
        },
    }


def test_the_launcher_container_falls_back_to_its_log_for_a_termination_message_unless_told_otherwise() -> (
    None
):
    """Ours (docs/extensions.md): the tail of a failed launcher's log becomes its termination message,
    which the MPIJob's Failed condition quotes; a policy the user chose stands."""
    body, _ = new_launcher_job(reference_job())
    assert (
        body["spec"]["template"]["spec"]["containers"][0]["terminationMessagePolicy"]
        == "FallbackToLogsOnError"
    )
    job = reference_job()
    job["spec"]["mpiReplicaSpecs"]["Launcher"]["template"]["spec"]["containers"][0][
        "terminationMessagePolicy"
    ] = "File"
    body, _ = new_launcher_job(job)
    assert body["spec"]["template"]["spec"]["containers"][0]["terminationMessagePolicy"] == "File"


@pytest.mark.parametrize(("value", "policy"), [("true", "Never"), ("True", "Never"), ("false", "OnFailure")])
def test_keep_failed_launcher_makes_each_attempt_a_pod_of_its_own(value: str, policy: str) -> None:
    """Ours (#354): restarted in place, a failed launcher's pod is deleted at the back-off limit."""
    job = reference_job()
    job["metadata"]["annotations"] = {"mpioperator.io/keep-failed-launcher": value}
    body, _ = compose.new_launcher_job(job)  # ours: a decorator, not upstream's builder
    assert body["spec"]["template"]["spec"]["restartPolicy"] == policy


@pytest.mark.parametrize("as_worker", [False, True])
def test_open_mpi_5_matches_hostfile_names_by_their_first_label_so_a_launcher_as_worker_is_not_sshed_to(
    as_worker: bool,
) -> None:
    """PRRTE tells its own host in the hostfile by name: kept fully qualified (`pi-launcher.pi.default.svc`)
    the launcher's entry never equals its hostname (`pi-launcher`), and under runLauncherAsWorker mpirun ssh-es
    to its own pod. PRRTE ssh-es to the name as the hostfile writes it either way."""
    job = with_spec(reference_job(), runLauncherAsWorker=as_worker)
    template, _ = launcher_pod_template(job)
    env = [(e["name"], e.get("value")) for e in template["spec"]["containers"][0]["env"]]
    assert [value for name, value in env if name == "PRTE_MCA_prte_keep_fqdn_hostnames"] == ["false"]
    # Open MPI 4 (ORTE) ssh-es to the name it keeps, so its own variable stays as upstream's.
    assert [value for name, value in env if name == "OMPI_MCA_orte_keep_fqdn_hostnames"] == ["true"]
