"""The exec launch agent (mpioperator.io/launch-agent: exec): the per-job RBAC objects, the launcher's pod
template, and the sync's decisions with and without the operator's --exec-agent, in memory."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from mpioperator.api.objects import Obj
from mpioperator.api.validation import validate_mpijob
from mpioperator.controller.decorators import exec_agent_objects as exec_agent
from mpioperator.controller.decorators.compose import new_launcher_job
from mpioperator.controller.sync import SyncSettings
from test.unit.controller.sync_fixtures import SHARED_CREATES, Scene, job

IMAGE = "mpioperator/kubectl-delivery:latest"
EXEC = {"mpioperator.io/launch-agent": "exec"}
ALLOWED = SyncSettings(exec_agent_image=IMAGE)


def exec_job(workers: int = 2, implementation: str = "OpenMPI") -> Obj:
    made = job(workers=workers)
    made["metadata"]["annotations"] = dict(EXEC)
    made["spec"]["mpiImplementation"] = implementation
    return made


def env_of(container: Obj) -> dict[str, str | None]:
    return {e["name"]: e.get("value") for e in container.get("env") or ()}


def test_the_role_lets_the_launcher_get_and_exec_into_the_named_workers_only() -> None:
    workers = ["pi-worker-0", "pi-worker-1", "pi-worker-2"]
    role = exec_agent.new_role(exec_job(workers=3), workers)

    assert role["metadata"]["name"] == "pi-launcher"
    assert role["metadata"]["namespace"] == "default"
    assert role["rules"] == [
        {"apiGroups": [""], "resources": ["pods"], "verbs": ["get"], "resourceNames": workers},
        {"apiGroups": [""], "resources": ["pods/exec"], "verbs": ["create"], "resourceNames": workers},
    ]


def test_a_job_without_workers_gets_a_role_that_grants_nothing() -> None:
    """An empty resourceNames would mean every pod of the namespace."""
    assert exec_agent.new_role(exec_job(workers=0), [])["rules"] == []


def test_the_account_role_and_binding_are_owned_by_the_job_and_bound_together() -> None:
    pi = exec_job()
    objects = [
        exec_agent.new_service_account(pi),
        exec_agent.new_role(pi, ["pi-worker-0"]),
        exec_agent.new_role_binding(pi),
    ]

    for obj in objects:
        (owner,) = obj["metadata"]["ownerReferences"]
        assert (owner["kind"], owner["name"], owner["uid"], owner["controller"]) == (
            "MPIJob",
            "pi",
            "U",
            True,
        )
    binding = objects[2]
    assert binding["roleRef"] == {
        "apiGroup": "rbac.authorization.k8s.io",
        "kind": "Role",
        "name": "pi-launcher",
    }
    assert binding["subjects"] == [{"kind": "ServiceAccount", "name": "pi-launcher", "namespace": "default"}]


@pytest.mark.parametrize(
    ("implementation", "expected"),
    [
        (
            "OpenMPI",
            {
                "OMPI_MCA_plm_rsh_agent": f"{exec_agent.AGENT} : sh",
                "OMPI_MCA_plm_rsh_no_tree_spawn": "1",
                "PRTE_MCA_plm_ssh_agent": f"{exec_agent.AGENT} : sh",
            },
        ),
        ("Intel", {"I_MPI_HYDRA_BOOTSTRAP": "rsh", "I_MPI_HYDRA_BOOTSTRAP_EXEC": exec_agent.AGENT}),
        ("MPICH", {"HYDRA_LAUNCHER": "rsh", "HYDRA_LAUNCHER_EXEC": exec_agent.AGENT}),
    ],
)
def test_the_launchers_mpi_is_told_to_start_its_daemons_with_the_agent(
    implementation: str, expected: dict[str, str]
) -> None:
    pi = exec_job(implementation=implementation)
    body, _ = new_launcher_job(pi, [exec_agent.with_exec_agent(None, pi, IMAGE)])

    env = env_of(body["spec"]["template"]["spec"]["containers"][0])
    assert {name: env.get(name) for name in expected} == expected
    assert env[exec_agent.CONTAINER_ENV] == "worker"


def test_the_launcher_runs_as_the_jobs_account_with_the_agent_delivered_into_an_empty_dir() -> None:
    pi = exec_job()
    pi["spec"]["mpiReplicaSpecs"]["Launcher"]["template"]["spec"]["containers"][0]["securityContext"] = {
        "runAsUser": 1000
    }
    body, _ = new_launcher_job(pi, [exec_agent.with_exec_agent(None, pi, IMAGE)])

    spec = body["spec"]["template"]["spec"]
    assert spec["serviceAccountName"] == "pi-launcher"
    assert spec["automountServiceAccountToken"] is True
    assert {"name": exec_agent.AGENT_VOLUME, "emptyDir": {}} in spec["volumes"]
    (delivery,) = spec["initContainers"]
    assert delivery["image"] == IMAGE
    assert delivery["args"] == [exec_agent.AGENT_DIR]
    assert delivery["volumeMounts"] == [{"name": exec_agent.AGENT_VOLUME, "mountPath": exec_agent.AGENT_DIR}]
    assert delivery["securityContext"] == {
        "runAsUser": 1000,
        "allowPrivilegeEscalation": False,
        "capabilities": {"drop": ["ALL"]},
        "seccompProfile": {"type": "RuntimeDefault"},
    }
    mounts = spec["containers"][0]["volumeMounts"]
    assert {"name": exec_agent.AGENT_VOLUME, "mountPath": exec_agent.AGENT_DIR} in mounts


def test_a_launch_agent_other_than_ssh_or_exec_is_invalid() -> None:
    bad = job()
    bad["metadata"]["annotations"] = {"mpioperator.io/launch-agent": "rsh"}

    (problem,) = validate_mpijob(bad)
    assert "mpioperator.io/launch-agent" in problem.field


# --- the sync, in memory -------------------------------------------------------------------------------


async def test_with_exec_agent_allowed_the_role_names_the_workers_made_and_comes_before_the_launcher() -> (
    None
):
    scene = Scene(exec_job(workers=2), settings=ALLOWED)

    await scene.sync()

    creates = [c for c in scene.writer.calls if c[0] == "create"]
    assert creates == [
        *SHARED_CREATES,
        ("create", "serviceaccounts", "pi-launcher"),
        ("create", "pods", "pi-worker-0"),
        ("create", "pods", "pi-worker-1"),
        ("create", "roles", "pi-launcher"),
        ("create", "rolebindings", "pi-launcher"),
        ("create", "jobs", "pi-launcher"),
    ]
    rules = scene.writer.body("create", "roles", "pi-launcher")["rules"]
    assert [r["resourceNames"] for r in rules] == [["pi-worker-0", "pi-worker-1"]] * 2
    launcher = scene.writer.body("create", "jobs", "pi-launcher")
    assert launcher["spec"]["template"]["spec"]["serviceAccountName"] == "pi-launcher"


async def test_the_rbac_is_asked_for_once_per_job_not_on_every_sync() -> None:
    scene = Scene(exec_job(workers=2), settings=ALLOWED)
    await scene.sync()
    before = len(scene.writer.calls)

    await scene.sync()

    again = [c for c in scene.writer.calls[before:] if c[1] in ("serviceaccounts", "roles", "rolebindings")]
    assert again == []


async def test_without_exec_agent_allowed_the_job_gets_a_condition_one_warning_and_no_pods() -> None:
    scene = Scene(exec_job(workers=2))

    result = await scene.sync()
    await scene.sync()

    assert not [c for c in scene.writer.calls if c[1] in ("pods", "jobs", "roles", "serviceaccounts")]
    warnings = [e for e in scene.recorder.events if e[1] == "ExecAgentNotAllowed"]
    assert len(warnings) == 1 and warnings[0][0] == "Warning"
    assert "--exec-agent" in warnings[0][2]
    condition = next(c for c in scene.written_status()["conditions"] if c["type"] == "ExecAgentNotAllowed")
    assert condition["status"] == "True"
    assert result.requeue_after is None, "nothing to retry: the flag changes only with a restart"


async def test_a_job_without_the_annotation_gets_no_rbac_and_its_launcher_runs_as_before() -> None:
    scene = Scene(job(workers=2), settings=ALLOWED)

    await scene.sync()

    assert not [c for c in scene.writer.calls if c[1] in ("serviceaccounts", "roles", "rolebindings")]
    spec = scene.writer.body("create", "jobs", "pi-launcher")["spec"]["template"]["spec"]
    assert "serviceAccountName" not in spec and "initContainers" not in spec


EXAMPLES = Path(__file__).resolve().parents[3] / "examples" / "v2beta1"


def test_the_exec_agent_example_is_ffffaraways_with_sleeping_workers_and_the_annotation_only() -> None:
    """The example is what test_real_exec_agent.py runs on the real node, under its own name."""
    migrating = yaml.safe_load((EXAMPLES / "migrating" / "pi-from-ffffaraway.yaml").read_text())
    example = yaml.safe_load((EXAMPLES / "extensions" / "pi-exec-agent.yaml").read_text())

    worker = migrating["spec"]["mpiReplicaSpecs"]["Worker"]["template"]["spec"]["containers"][0]
    worker["command"] = ["sleep", "infinity"]
    del worker["args"], worker["readinessProbe"]
    migrating["metadata"]["annotations"]["mpioperator.io/launch-agent"] = "exec"
    migrating["metadata"]["name"] = "pi-exec-agent"
    assert example == migrating
