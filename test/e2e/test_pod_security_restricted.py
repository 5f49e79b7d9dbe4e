"""Jobs whose templates pass Pod Security's `restricted` level run in a namespace that enforces it: every
container the operator adds to a pod (the exec agent's `kubectl-delivery`, the launcher's
`wait-for-hosts`) passes it too, so the Job controller's launcher pod and the operator's workers are all
admitted."""

from __future__ import annotations

from typing import Any

import pytest

from mpioperator.testing.cluster import LocalCluster
from mpioperator.testing.jobs import TIMEOUT, Job
from mpioperator.testing.mpijobs import mpijob
from mpioperator.testing.operator import OperatorProcess
from mpioperator.testing.wait import wait_for

RESTRICTED = {"pod-security.kubernetes.io/enforce": "restricted"}
# What `restricted` asks of each container that its pod does not already say.
HARDENED = {"allowPrivilegeEscalation": False, "capabilities": {"drop": ["ALL"]}}


@pytest.fixture
def ns(exec_agent_cluster: LocalCluster, make_namespace: Any, exec_agent_operator: OperatorProcess) -> str:
    name: str = make_namespace(exec_agent_cluster)
    exec_agent_cluster.rest.merge_patch(f"/api/v1/namespaces/{name}", {"metadata": {"labels": RESTRICTED}})
    return name


def restricted(
    body: dict[str, Any], pod_security: dict[str, Any], container_security: dict[str, Any]
) -> None:
    for replica in body["spec"]["mpiReplicaSpecs"].values():
        spec = replica["template"]["spec"]
        spec["securityContext"] = dict(pod_security)
        for container in spec["containers"]:
            container["securityContext"] = dict(container_security)


def refusals(cluster: LocalCluster, ns: str, name: str) -> list[str]:
    """The Job controller's FailedCreate events for the launcher Job: how admission's refusal shows."""
    events = cluster.rest.get(f"/api/v1/namespaces/{ns}/events")["items"]
    return [
        str(e.get("message"))
        for e in events
        if e.get("reason") == "FailedCreate"
        and (e.get("involvedObject") or {}).get("name") == f"{name}-launcher"
    ]


def wait_for_pods_or_refusal(job: Job, workers: int) -> None:
    wait_for(
        lambda: (
            (job.pods("launcher") and len(job.pods("worker")) == workers)
            or refusals(job.cluster, job.ns, job.name)
        ),
        timeout=TIMEOUT,
        what=f"{job.name}'s pods, or the launcher's refused",
    )


@pytest.mark.parametrize(
    ("pod_security", "container_security"),
    [
        # The image's own non-root user: the delivery container needs a user of its own.
        ({"runAsNonRoot": True, "seccompProfile": {"type": "RuntimeDefault"}}, HARDENED),
        # Everything said per container, nothing for the pod.
        (
            {},
            {
                **HARDENED,
                "runAsNonRoot": True,
                "runAsUser": 1000,
                "seccompProfile": {"type": "RuntimeDefault"},
            },
        ),
    ],
    ids=["pod-level", "container-level"],
)
def test_an_exec_agent_job_runs_in_a_restricted_namespace(
    exec_agent_cluster: LocalCluster,
    ns: str,
    pod_security: dict[str, Any],
    container_security: dict[str, Any],
) -> None:
    body = mpijob(
        "agent", workers=2, launcher_runs_for="600s", annotations={"mpioperator.io/launch-agent": "exec"}
    )
    restricted(body, pod_security, container_security)
    job = Job(exec_agent_cluster, ns, "agent").submit(body)

    wait_for_pods_or_refusal(job, workers=2)

    assert refusals(exec_agent_cluster, ns, "agent") == []
    [launcher] = job.pods("launcher")
    assert [c["name"] for c in launcher["spec"]["initContainers"]] == ["kubectl-delivery"]
    assert len(job.pods("worker")) == 2


def test_a_job_whose_launcher_waits_for_its_hosts_runs_in_a_restricted_namespace(
    exec_agent_cluster: LocalCluster, ns: str
) -> None:
    body = mpijob(
        "waits", workers=2, launcher_runs_for="600s", annotations={"mpioperator.io/wait-for-ssh-port": "2222"}
    )
    restricted(
        body,
        {"runAsNonRoot": True, "runAsUser": 1000, "seccompProfile": {"type": "RuntimeDefault"}},
        HARDENED,
    )
    job = Job(exec_agent_cluster, ns, "waits").submit(body)

    wait_for_pods_or_refusal(job, workers=2)

    assert refusals(exec_agent_cluster, ns, "waits") == []
    [launcher] = job.pods("launcher")
    assert [c["name"] for c in launcher["spec"]["initContainers"]] == ["mpioperator-wait-for-hosts"]
