"""Worker pods (§2.6.4, Appendix A, upstream's TestNewLauncherAndWorker worker half)."""

from __future__ import annotations

import copy

import pytest

from mpioperator.api.objects import Obj
from mpioperator.controller.builders.worker_pod import new_worker
from test.unit.controller.jobs import OWNER, reference_job, with_spec

SSH_ITEMS = [
    {"key": "ssh-privatekey", "path": "id_rsa"},
    {"key": "ssh-publickey", "path": "id_rsa.pub"},
    {"key": "ssh-publickey", "path": "authorized_keys"},
]


def _worker_template(job: Obj) -> Obj:
    template: Obj = job["spec"]["mpiReplicaSpecs"]["Worker"]["template"]
    return template


def test_worker_renders_appendix_a() -> None:
    assert new_worker(reference_job(), 0) == {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": "pi-worker-0",
            "namespace": "default",
            "labels": {
                "training.kubeflow.org/operator-name": "mpi-operator",
                "training.kubeflow.org/job-name": "pi",
                "training.kubeflow.org/job-role": "worker",
                "mpi_job_name": "pi",
                "mpi_role_type": "worker",
                "training.kubeflow.org/replica-index": "0",
            },
            "ownerReferences": [OWNER],
        },
        "spec": {
            "hostname": "pi-worker-0",
            "subdomain": "pi",
            "dnsConfig": {"searches": ["pi.default.svc.cluster.local"]},
            "restartPolicy": "Never",
            "containers": [
                {
                    "name": "worker",
                    "image": "img",
                    "command": ["/usr/sbin/sshd", "-De"],
                    "env": [{"name": "K_MPI_JOB_ROLE", "value": "worker"}],
                    "volumeMounts": [{"name": "ssh-auth", "mountPath": "/root/.ssh"}],
                }
            ],
            "volumes": [
                {
                    "name": "ssh-auth",
                    "secret": {"secretName": "pi-ssh", "defaultMode": 384, "items": SSH_ITEMS},
                }
            ],
        },
    }


def test_worker_index_label_is_shifted_by_one_when_launcher_works() -> None:
    job = with_spec(reference_job(), runLauncherAsWorker=True)
    pod = new_worker(job, 1)
    assert pod["metadata"]["name"] == "pi-worker-1"
    assert pod["metadata"]["labels"]["training.kubeflow.org/replica-index"] == "2"


def test_worker_overrides_case() -> None:
    """The `overrides` case: custom SSH path, hostNetwork, user command/env/volumes kept first,
    template labels and annotations kept, other template metadata dropped, second container untouched."""
    job = with_spec(reference_job(), sshAuthMountPath="/home/mpiuser/.ssh", mpiImplementation="Intel")
    sidecar = {"name": "sidecar", "image": "side", "env": [{"name": "A", "value": "1"}]}
    _worker_template(job).update(
        {
            "metadata": {
                "name": "ignored",
                "labels": {"app": "mine", "training.kubeflow.org/job-role": "spoofed"},
                "annotations": {"note": "kept"},
                "finalizers": ["example.com/keep"],
            },
            "spec": {
                "hostNetwork": True,
                "dnsConfig": {"searches": ["corp.example"], "options": [{"name": "ndots", "value": "2"}]},
                "restartPolicy": "Always",
                "containers": [
                    {
                        "name": "worker",
                        "image": "img",
                        "command": ["/entrypoint.sh"],
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
    assert new_worker(job, 12) == {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": "pi-worker-12",
            "namespace": "default",
            "labels": {
                "app": "mine",
                "training.kubeflow.org/operator-name": "mpi-operator",
                "training.kubeflow.org/job-name": "pi",
                "training.kubeflow.org/job-role": "worker",
                "mpi_job_name": "pi",
                "mpi_role_type": "worker",
                "training.kubeflow.org/replica-index": "12",
            },
            "annotations": {"note": "kept"},
            "ownerReferences": [OWNER],
        },
        "spec": {
            "hostNetwork": True,
            "dnsPolicy": "ClusterFirstWithHostNet",
            "hostname": "pi-worker-12",
            "subdomain": "pi",
            "dnsConfig": {
                "searches": ["corp.example", "pi.default.svc.cluster.local"],
                "options": [{"name": "ndots", "value": "2"}],
            },
            "restartPolicy": "Never",
            "containers": [
                {
                    "name": "worker",
                    "image": "img",
                    "command": ["/entrypoint.sh"],
                    "env": [
                        {"name": "USER_VAR", "value": "x"},
                        {"name": "K_MPI_JOB_ROLE", "value": "worker"},
                    ],
                    "volumeMounts": [
                        {"name": "data", "mountPath": "/data"},
                        {"name": "ssh-auth", "mountPath": "/home/mpiuser/.ssh"},
                    ],
                },
                sidecar,
            ],
            "volumes": [
                {"name": "data", "emptyDir": {}},
                {"name": "ssh-auth", "secret": {"secretName": "pi-ssh", "items": SSH_ITEMS}},
            ],
        },
    }
    assert job == original, "the builder must not mutate the MPIJob"


def test_worker_with_args_only_keeps_the_image_entrypoint() -> None:
    job = reference_job()
    _worker_template(job)["spec"]["containers"][0]["args"] = ["serve"]
    container = new_worker(job, 0)["spec"]["containers"][0]
    assert "command" not in container
    assert container["args"] == ["serve"]


@pytest.mark.parametrize(
    ("replica_policy", "template_policy", "expected"),
    [
        ("Never", None, "Never"),
        ("OnFailure", None, "OnFailure"),
        ("ExitCode", None, "Never"),
        ("Never", "OnFailure", "Never"),
        ("OnFailure", "Always", "OnFailure"),
    ],
)
def test_worker_restart_policy_comes_from_the_replica_spec(
    replica_policy: str, template_policy: str | None, expected: str
) -> None:
    job = reference_job()
    job["spec"]["mpiReplicaSpecs"]["Worker"]["restartPolicy"] = replica_policy
    if template_policy is not None:
        _worker_template(job)["spec"]["restartPolicy"] = template_policy
    assert new_worker(job, 0)["spec"]["restartPolicy"] == expected


def test_worker_dns_search_ignores_the_cluster_domain_and_uses_job_namespace() -> None:
    job = reference_job()
    job["metadata"]["namespace"] = "team-a"
    pod = new_worker(job, 0)
    assert pod["metadata"]["namespace"] == "team-a"
    assert pod["spec"]["dnsConfig"] == {"searches": ["pi.team-a.svc.cluster.local"]}


def test_worker_decorator_runs_on_the_finished_pod() -> None:
    def decorate(pod: Obj) -> None:
        pod["spec"]["schedulerName"] = "volcano"
        pod["metadata"].setdefault("annotations", {})["scheduling.k8s.io/group-name"] = "pi"

    pod = new_worker(reference_job(), 0, [decorate])
    assert pod["spec"]["schedulerName"] == "volcano"
    assert pod["metadata"]["annotations"] == {"scheduling.k8s.io/group-name": "pi"}
