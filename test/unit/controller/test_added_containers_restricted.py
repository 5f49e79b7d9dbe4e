"""Every container the operator adds to a launcher pod (the exec agent's `kubectl-delivery`, the
`wait-for-hosts` waiter) passes Pod Security's `restricted` level whenever the user's templates do, and
the delivery runs as the user the launcher runs as. The checks are restricted's container checks, read
with the pod's settings as the defaults they are (the e2e tier has the API server's own admission)."""

from __future__ import annotations

import copy

import pytest

from mpioperator.api.objects import Obj
from mpioperator.controller.decorators import exec_agent_objects as exec_agent
from mpioperator.controller.decorators.compose import launcher_pod_template
from mpioperator.controller.decorators.host_waiter import HostWaiter
from test.unit.controller.sync_fixtures import job

IMAGE = "mpioperator/kubectl-delivery:latest"
HARDENED: Obj = {"allowPrivilegeEscalation": False, "capabilities": {"drop": ["ALL"]}}
RUNTIME_DEFAULT: Obj = {"type": "RuntimeDefault"}


def restricted_violations(spec: Obj) -> list[str]:
    """What Pod Security's `restricted` level (its container checks) refuses in a pod spec."""
    pod = spec.get("securityContext") or {}
    found = []
    for container in [*(spec.get("initContainers") or []), *spec["containers"]]:
        own = container.get("securityContext") or {}
        name = container["name"]
        if own.get("allowPrivilegeEscalation") is not False:
            found.append(f"{name}: allowPrivilegeEscalation")
        capabilities = own.get("capabilities") or {}
        if "ALL" not in (capabilities.get("drop") or []) or set(capabilities.get("add") or []) - {
            "NET_BIND_SERVICE"
        }:
            found.append(f"{name}: capabilities")
        if own.get("runAsNonRoot", pod.get("runAsNonRoot")) is not True:
            found.append(f"{name}: runAsNonRoot")
        if own.get("runAsUser", pod.get("runAsUser")) == 0:
            found.append(f"{name}: runAsUser 0")
        seccomp = (own.get("seccompProfile") or pod.get("seccompProfile") or {}).get("type")
        if seccomp not in ("RuntimeDefault", "Localhost"):
            found.append(f"{name}: seccompProfile")
    return found


def restricted_job(pod_security: Obj, container_security: Obj, annotations: dict[str, str]) -> Obj:
    made = job(workers=2)
    made["metadata"]["annotations"] = dict(annotations)
    for replica in made["spec"]["mpiReplicaSpecs"].values():
        spec = replica["template"]["spec"]
        spec["securityContext"] = copy.deepcopy(pod_security)
        for container in spec["containers"]:
            container["securityContext"] = copy.deepcopy(container_security)
    return made


TEMPLATES = [
    pytest.param(
        {"runAsNonRoot": True, "seccompProfile": RUNTIME_DEFAULT}, HARDENED, id="pod-level, image's user"
    ),
    pytest.param(
        {"runAsNonRoot": True, "runAsUser": 1000, "seccompProfile": RUNTIME_DEFAULT},
        HARDENED,
        id="pod-level uid",
    ),
    pytest.param(
        {},
        {**HARDENED, "runAsNonRoot": True, "runAsUser": 1000, "seccompProfile": RUNTIME_DEFAULT},
        id="container-level",
    ),
    pytest.param(
        {"runAsNonRoot": True, "seccompProfile": {"type": "Localhost", "localhostProfile": "p.json"}},
        {**HARDENED, "runAsUser": 1000},
        id="localhost seccomp",
    ),
]


@pytest.mark.parametrize(("pod_security", "container_security"), TEMPLATES)
def test_the_exec_agents_delivery_container_passes_restricted_when_the_template_does(
    pod_security: Obj, container_security: Obj
) -> None:
    pi = restricted_job(pod_security, container_security, {"mpioperator.io/launch-agent": "exec"})
    user_template = pi["spec"]["mpiReplicaSpecs"]["Launcher"]["template"]["spec"]
    assert restricted_violations(user_template) == []

    template, _ = launcher_pod_template(pi, [exec_agent.with_exec_agent(None, pi, IMAGE)])

    assert [c["name"] for c in template["spec"]["initContainers"]] == ["kubectl-delivery"]
    assert restricted_violations(template["spec"]) == []


@pytest.mark.parametrize(("pod_security", "container_security"), TEMPLATES)
def test_the_host_waiter_passes_restricted_when_the_template_does(
    pod_security: Obj, container_security: Obj
) -> None:
    pi = restricted_job(pod_security, container_security, {"mpioperator.io/wait-for-ssh-port": "2222"})

    template, _ = launcher_pod_template(pi, (), waiter=HostWaiter())

    assert [c["name"] for c in template["spec"]["initContainers"]] == ["mpioperator-wait-for-hosts"]
    assert restricted_violations(template["spec"]) == []


@pytest.mark.parametrize(
    ("pod_security", "container_security", "user"),
    [
        ({}, {"runAsUser": 1000}, 1000),
        ({"runAsUser": 2000}, {}, 2000),
        ({"runAsUser": 2000}, {"runAsUser": 1000}, 1000),
        ({"runAsNonRoot": True}, {}, 65532),
        ({}, {"runAsNonRoot": True}, 65532),
    ],
)
def test_the_delivery_runs_as_the_launchers_user_and_as_a_non_root_one_when_asked(
    pod_security: Obj, container_security: Obj, user: int
) -> None:
    pi = restricted_job(pod_security, container_security, {"mpioperator.io/launch-agent": "exec"})

    template, _ = launcher_pod_template(pi, [exec_agent.with_exec_agent(None, pi, IMAGE)])

    (delivery,) = template["spec"]["initContainers"]
    assert delivery["securityContext"]["runAsUser"] == user
    asked_non_root = pod_security.get("runAsNonRoot") or container_security.get("runAsNonRoot")
    assert delivery["securityContext"].get("runAsNonRoot") is (True if asked_non_root else None)


def test_a_launcher_that_says_nothing_of_its_user_keeps_the_delivery_images_user_hardened() -> None:
    pi = restricted_job({}, {}, {"mpioperator.io/launch-agent": "exec"})

    template, _ = launcher_pod_template(pi, [exec_agent.with_exec_agent(None, pi, IMAGE)])

    (delivery,) = template["spec"]["initContainers"]
    assert delivery["securityContext"] == {**HARDENED, "seccompProfile": RUNTIME_DEFAULT}
